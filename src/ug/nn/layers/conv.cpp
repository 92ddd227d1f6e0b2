#include "ug/nn/layers/conv.h"

#include <cmath>
#include <sstream>

#include "ug/nn/init.h"
#include "ug/nn/mixed_precision.h"
#include "ug/ops/autocast.h"
#include "ug/ops/conv3d.h"
#include "ug/ops/pool.h"

namespace ug::nn {

namespace {

/** One size for every spatial dim, or one per dim. */
Dims per_dim(Dims d, int n, const std::string& layer, const char* what) {
  if (d.size() == 1 && n > 1) d = Dims(static_cast<size_t>(n), d[0]);
  if (static_cast<int>(d.size()) != n) fail("[", layer, "] ", what, " needs 1 or ", n, " values, got ", d.size());
  return d;
}

}  // namespace

ConvImpl::ConvImpl(int spatial_dims, int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride,
                   ConvPadding padding, Dims dilation, int64_t groups, bool bias, bool transposed, Dims output_padding)
    : Module(transposed ? "ConvTranspose" + std::to_string(spatial_dims) + "d"
                        : "Conv" + std::to_string(spatial_dims) + "d"),
      spatial_dims_(spatial_dims),
      in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_size_(per_dim(std::move(kernel_size), spatial_dims, type_name(), "kernel_size")),
      stride_(per_dim(std::move(stride), spatial_dims, type_name(), "stride")),
      padding_(std::move(padding)),
      dilation_(per_dim(std::move(dilation), spatial_dims, type_name(), "dilation")),
      groups_(groups),
      transposed_(transposed),
      output_padding_(per_dim(std::move(output_padding), spatial_dims, type_name(), "output_padding")),
      has_bias_(bias),
      compute_dtype_(mixed_precision::global_policy().autocast_dtype()) {
  if (in_channels <= 0 || out_channels <= 0 || groups <= 0 || in_channels % groups || out_channels % groups)
    fail("[", type_name(), "] in_channels (", in_channels, ") and out_channels (", out_channels,
         ") must be positive multiples of groups (", groups, ")");
  Dims shape = transposed ? Dims{in_channels, out_channels / groups} : Dims{out_channels, in_channels / groups};
  for (int64_t k : kernel_size_) shape.push_back(k);
  register_parameter("weight", empty(shape));
  register_parameter("bias", bias ? empty({out_channels}) : Tensor());
  reset_parameters();
}

void ConvImpl::reset_parameters() {
  Tensor& w = parameter("weight");
  init::kaiming_uniform_(w, std::sqrt(5.0));
  if (Tensor& b = parameter("bias"); b.defined()) {
    const auto fan_in = static_cast<double>(init::calculate_fan_in_and_fan_out(w).first);
    const double bound = fan_in > 0 ? 1 / std::sqrt(fan_in) : 0;
    init::uniform_(b, -bound, bound);
  }
}

Tensor ConvImpl::forward(const Tensor& x) {
  const Tensor& w = parameter("weight");
  std::optional<Tensor> b;
  if (const Tensor& bias = parameter("bias"); bias.defined()) b = bias;
  std::optional<AutocastGuard> mixed;
  if (compute_dtype_) mixed.emplace(x.device().type, *compute_dtype_);
  if (transposed_) {
    auto conv_t = spatial_dims_ == 1 ? conv_transpose1d : spatial_dims_ == 2 ? conv_transpose2d : conv_transpose3d;
    return conv_t(x, w, b, stride_, padding_.sizes, output_padding_, groups_, dilation_);
  }
  auto conv = spatial_dims_ == 1 ? conv1d : spatial_dims_ == 2 ? conv2d : conv3d;
  return conv(x, w, b, stride_, padding_, dilation_, groups_);
}

std::string ConvImpl::extra_repr() const {
  std::ostringstream s;
  s << in_channels_ << ", " << out_channels_ << ", kernel_size=" << tuple_repr(kernel_size_)
    << ", stride=" << tuple_repr(stride_);
  if (!padding_.mode.empty()) s << ", padding=" << padding_.mode;
  else if (padding_.sizes != Dims{0})
    s << ", padding=" << tuple_repr(per_dim(padding_.sizes, spatial_dims_, type_name(), "padding"));
  if (dilation_ != Dims(static_cast<size_t>(spatial_dims_), 1)) s << ", dilation=" << tuple_repr(dilation_);
  if (output_padding_ != Dims(static_cast<size_t>(spatial_dims_), 0))
    s << ", output_padding=" << tuple_repr(output_padding_);
  if (groups_ != 1) s << ", groups=" << groups_;
  if (!has_bias_) s << ", bias=False";
  return s.str();
}

Tensor MaxPoolImpl::forward(const Tensor& x) {
  return (dims_ == 1   ? max_pool1d
          : dims_ == 2 ? max_pool2d
                       : max_pool3d)(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::string MaxPoolImpl::extra_repr() const {
  return "kernel_size=" + size_repr(kernel_) + ", stride=" + size_repr(stride_.empty() ? kernel_ : stride_) +
         ", padding=" + size_repr(padding_) + ", dilation=" + size_repr(dilation_) +
         ", ceil_mode=" + (ceil_mode_ ? "True" : "False");
}

Tensor AvgPoolImpl::forward(const Tensor& x) {
  if (dims_ == 1) return avg_pool1d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
  return (dims_ == 2 ? avg_pool2d : avg_pool3d)(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_,
                                                divisor_override_);
}

std::string AvgPoolImpl::extra_repr() const {
  // torch's AvgPool1d keeps its sizes as tuples, AvgPool2d as given.
  auto repr = dims_ == 1 ? tuple_repr : size_repr;
  return "kernel_size=" + repr(kernel_) + ", stride=" + repr(stride_.empty() ? kernel_ : stride_) +
         ", padding=" + repr(padding_);
}

Tensor AdaptivePoolImpl::forward(const Tensor& x) {
  if (max_)
    return (dims_ == 1 ? adaptive_max_pool1d : dims_ == 2 ? adaptive_max_pool2d : adaptive_max_pool3d)(x, output_size_);
  return (dims_ == 1 ? adaptive_avg_pool1d : dims_ == 2 ? adaptive_avg_pool2d : adaptive_avg_pool3d)(x, output_size_);
}

}  // namespace ug::nn
