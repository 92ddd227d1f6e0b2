#include "ug/nn/layers/conv.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ug/nn/init.h"
#include "ug/nn/mixed_precision.h"
#include "ug/ops/autocast.h"
#include "ug/ops/conv3d.h"
#include "ug/ops/join.h"
#include "ug/ops/pool.h"

namespace ug::nn {

namespace {

/** One size for every spatial dim, or one per dim. */
Dims per_dim(Dims d, int n, const std::string& layer, const char* what) {
  if (d.size() == 1 && n > 1) d = Dims(static_cast<size_t>(n), d[0]);
  if (static_cast<int>(d.size()) != n) fail("[", layer, "] ", what, " needs 1 or ", n, " values, got ", d.size());
  return d;
}

/** Registers a convolution's weight (and bias) for in_channels input channels. */
void make_weight(Module& m, bool transposed, int64_t in_channels, int64_t out_channels, int64_t groups,
                 const Dims& kernel_size, bool bias, DType dtype) {
  Dims shape = transposed ? Dims{in_channels, out_channels / groups} : Dims{out_channels, in_channels / groups};
  for (int64_t k : kernel_size) shape.push_back(k);
  const Options opts{.dtype = dtype, .device = {}};
  m.register_parameter("weight", empty(shape, opts));
  m.register_parameter("bias", bias ? empty({out_channels}, opts) : Tensor());
}

}  // namespace

ConvImpl::ConvImpl(int spatial_dims, int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride,
                   ConvPadding padding, Dims dilation, int64_t groups, bool bias, bool transposed, Dims output_padding,
                   std::string padding_mode)
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
      padding_mode_(std::move(padding_mode)),
      compute_dtype_(mixed_precision::global_policy().autocast_dtype()) {
  if (padding_mode_ != "zeros" && padding_mode_ != "reflect" && padding_mode_ != "replicate" &&
      padding_mode_ != "circular")
    fail("[", type_name(), "] padding_mode must be one of 'zeros', 'reflect', 'replicate' or 'circular', but got ",
         "padding_mode='", padding_mode_, "'");
  if (padding_.mode == "same")
    for (int64_t s : stride_)
      if (s != 1) fail("[", type_name(), "] padding='same' is not supported for strided convolutions");
  if (transposed && padding_mode_ != "zeros")
    fail("[", type_name(), "] Only \"zeros\" padding mode is supported for ", type_name());
  // in_channels < 0: a lazy layer (torch's LazyConv*), whose weight the first forward makes.
  const bool lazy = in_channels < 0;
  if ((!lazy && (in_channels == 0 || in_channels % groups)) || out_channels <= 0 || groups <= 0 ||
      out_channels % groups)
    fail("[", type_name(), "] in_channels (", in_channels, ") and out_channels (", out_channels,
         ") must be positive multiples of groups (", groups, ")");
  register_parameter("weight", Tensor());
  register_parameter("bias", Tensor());
  if (lazy) return;
  make_weight(*this, transposed, in_channels, out_channels, groups, kernel_size_, bias, get_default_dtype());
  reset_parameters();
}

void ConvImpl::reset_parameters() {
  Tensor& w = parameter("weight");
  if (!w.defined()) return;
  init::kaiming_uniform_(w, std::sqrt(5.0));
  if (Tensor& b = parameter("bias"); b.defined()) {
    const auto fan_in = static_cast<double>(init::calculate_fan_in_and_fan_out(w).first);
    const double bound = fan_in > 0 ? 1 / std::sqrt(fan_in) : 0;
    init::uniform_(b, -bound, bound);
  }
}

void ConvImpl::build(int64_t channels) {
  in_channels_ = channels;
  if (type_name().starts_with("Lazy")) set_type_name(type_name().substr(4));
  make_weight(*this, transposed_, channels, out_channels_, groups_, kernel_size_, has_bias_, get_default_dtype());
  reset_parameters();
}

void ConvImpl::load_lazy_shapes(const TensorDict& state, const std::string& prefix) {
  // weight [out, in / groups, *kernel], transposed [in, out / groups, *kernel]
  const Tensor* w = state.find(prefix + "weight");
  if (in_channels_ < 0 && w && w->dim() == spatial_dims_ + 2) build(transposed_ ? w->size(0) : w->size(1) * groups_);
}

Tensor ConvImpl::forward(const Tensor& x) { return run(x, output_padding_); }

Tensor ConvImpl::forward(const Tensor& x, const Dims& output_size) {
  if (!transposed_) fail("[", type_name(), "] output_size is only a transposed convolution's");
  const int n = spatial_dims_;
  const int non_spatial = x.dim() == n + 2 ? 2 : 1;
  const size_t skip = static_cast<int>(output_size.size()) == non_spatial + n ? static_cast<size_t>(non_spatial) : 0;
  const Dims want(output_size.begin() + skip, output_size.end());
  if (static_cast<int>(want.size()) != n)
    fail("[", type_name(), "] for a ", x.dim(), "D input, output_size must have ", n, " or ", non_spatial + n,
         " elements (got ", output_size.size(), ")");
  if (x.dim() < n + 1) fail("[", type_name(), "] expected a ", n + 1, "D or ", n + 2, "D input, got shape ", x.shape());
  // The sizes stride and padding reach run from the unpadded output to stride - 1 past it.
  const Dims padding = per_dim(padding_.sizes, n, type_name(), "padding");
  Dims low, high, output_padding;
  for (size_t d = 0; d < static_cast<size_t>(n); ++d) {
    low.push_back((x.size(static_cast<int64_t>(d) + non_spatial) - 1) * stride_[d] - 2 * padding[d] +
                  dilation_[d] * (kernel_size_[d] - 1) + 1);
    high.push_back(low[d] + stride_[d] - 1);
  }
  for (size_t d = 0; d < static_cast<size_t>(n); ++d) {
    if (want[d] < low[d] || want[d] > high[d])
      fail("[", type_name(), "] requested an output size of ", want, ", but valid sizes range from ", low, " to ", high,
           " (for an input of ", x.shape(), ")");
    output_padding.push_back(want[d] - low[d]);
  }
  return run(x, output_padding);
}

Tensor ConvImpl::run(const Tensor& x, const Dims& output_padding) {
  if (in_channels_ < 0) {
    // A lazy layer: the channels of the first input (dim 0 of an unbatched one); the default
    // dtype, as torch's factory dtype (not the input's, which autocast may have lowered).
    if (x.dim() != spatial_dims_ + 1 && x.dim() != spatial_dims_ + 2)
      fail("[", type_name(), "] expected a ", spatial_dims_ + 1, "D or ", spatial_dims_ + 2, "D input, got shape ",
           x.shape());
    const int64_t channels = x.size(x.dim() == spatial_dims_ + 1 ? 0 : 1);
    if (channels <= 0 || channels % groups_)
      fail("[", type_name(), "] the input's ", channels, " channels must be a positive multiple of groups (", groups_,
           ")");
    build(channels);
  }
  const Tensor& w = parameter("weight");
  std::optional<Tensor> b;
  if (const Tensor& bias = parameter("bias"); bias.defined()) b = bias;
  std::optional<AutocastGuard> mixed;
  if (compute_dtype_) mixed.emplace(x.device().type, *compute_dtype_);
  if (transposed_) {
    auto conv_t = spatial_dims_ == 1 ? conv_transpose1d : spatial_dims_ == 2 ? conv_transpose2d : conv_transpose3d;
    return conv_t(x, w, b, stride_, padding_.sizes, output_padding, groups_, dilation_);
  }
  auto conv = spatial_dims_ == 1 ? conv1d : spatial_dims_ == 2 ? conv2d : conv3d;
  if (padding_mode_ == "zeros" || padding_.mode == "valid") return conv(x, w, b, stride_, padding_, dilation_, groups_);
  // pad's sizes run from the last dim; "same" puts the odd one out on the right, as torch's
  Dims pads;
  const Dims sizes = padding_.mode.empty() ? per_dim(padding_.sizes, spatial_dims_, type_name(), "padding") : Dims{};
  for (int i = spatial_dims_ - 1; i >= 0; --i) {
    const int64_t total = sizes.empty() ? dilation_[static_cast<size_t>(i)] * (kernel_size_[static_cast<size_t>(i)] - 1)
                                        : 2 * sizes[static_cast<size_t>(i)];
    pads.push_back(total / 2);
    pads.push_back(total - total / 2);
  }
  return conv(pad(x, pads, padding_mode_), w, b, stride_, ConvPadding(Dims{0}), dilation_, groups_);
}

std::string ConvImpl::extra_repr() const {
  std::ostringstream s;
  s << std::max<int64_t>(in_channels_, 0) << ", " << out_channels_ << ", kernel_size=" << tuple_repr(kernel_size_)
    << ", stride=" << tuple_repr(stride_);
  const Dims padding = padding_.mode.empty() ? per_dim(padding_.sizes, spatial_dims_, type_name(), "padding") : Dims{};
  if (!padding_.mode.empty()) s << ", padding=" << padding_.mode;
  else if (padding != Dims(static_cast<size_t>(spatial_dims_), 0)) s << ", padding=" << tuple_repr(padding);
  if (dilation_ != Dims(static_cast<size_t>(spatial_dims_), 1)) s << ", dilation=" << tuple_repr(dilation_);
  if (output_padding_ != Dims(static_cast<size_t>(spatial_dims_), 0))
    s << ", output_padding=" << tuple_repr(output_padding_);
  if (groups_ != 1) s << ", groups=" << groups_;
  if (!has_bias_) s << ", bias=False";
  if (padding_mode_ != "zeros") s << ", padding_mode=" << padding_mode_;
  return s.str();
}

Tensor MaxPoolImpl::forward(const Tensor& x) {
  return (dims_ == 1   ? max_pool1d
          : dims_ == 2 ? max_pool2d
                       : max_pool3d)(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::pair<Tensor, Tensor> MaxPoolImpl::forward_with_indices(const Tensor& x) {
  return (dims_ == 1   ? max_pool1d_with_indices
          : dims_ == 2 ? max_pool2d_with_indices
                       : max_pool3d_with_indices)(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
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
  Dims size = per_dim(output_size_, static_cast<int>(dims_), type_name(), "output_size");
  for (int64_t i = 0; i < dims_; ++i)
    if (size[static_cast<size_t>(i)] < 0 && x.dim() >= dims_)
      size[static_cast<size_t>(i)] = x.size(x.dim() - dims_ + i);
  if (max_) return (dims_ == 1 ? adaptive_max_pool1d : dims_ == 2 ? adaptive_max_pool2d : adaptive_max_pool3d)(x, size);
  return (dims_ == 1 ? adaptive_avg_pool1d : dims_ == 2 ? adaptive_avg_pool2d : adaptive_avg_pool3d)(x, size);
}

std::string AdaptivePoolImpl::extra_repr() const {
  if (std::none_of(output_size_.begin(), output_size_.end(), [](int64_t s) { return s < 0; }))
    return "output_size=" + size_repr(output_size_);
  std::string s;
  for (int64_t v : output_size_) s += (s.empty() ? "" : ", ") + (v < 0 ? std::string("None") : std::to_string(v));
  return "output_size=" + (output_size_.size() == 1 ? s : "(" + s + ")");
}

}  // namespace ug::nn
