#include "ug/nn/layers/keras_conv.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/nn/init.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/layers/linear.h"
#include "ug/nn/mixed_precision.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/conv.h"
#include "ug/ops/join.h"
#include "ug/ops/pool.h"
#include "ug/ops/unary.h"

namespace ug::nn {

namespace {

using Pads = std::vector<std::pair<int64_t, int64_t>>;  // (before, after) per spatial dim

/** v as `rank` sizes (one entry applies to every dim), each positive. */
Dims per_dim(const Dims& v, int rank, const std::string& layer, const char* what) {
  Dims out = v;
  if (v.size() == 1)
    while (static_cast<int>(out.size()) < rank) out.push_back(v[0]);
  if (static_cast<int>(out.size()) != rank || std::any_of(out.begin(), out.end(), [](int64_t s) { return s <= 0; }))
    fail("[", layer, "] ", what, " must be a positive int or a tuple of ", rank, " positive ints, got ", tuple_repr(v));
  return out;
}

/** value, lower-cased, if it is one of allowed (Keras takes "SAME" too). */
std::string option(const std::string& value, const std::vector<std::string>& allowed, const std::string& layer,
                   const char* what) {
  std::string key = value;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) return key;
  std::string names;
  for (const std::string& a : allowed) names += (names.empty() ? "'" : ", '") + a + "'";
  fail("[", layer, "] ", what, " must be one of ", names, ", got '", value, "'");
}

std::string data_format_option(const std::string& value, const std::string& layer) {
  return option(value.empty() ? "channels_last" : value, {"channels_last", "channels_first"}, layer, "data_format");
}

const std::vector<std::string> kInitializers = {"glorot_uniform", "glorot_normal", "he_uniform",
                                                "he_normal",      "zeros",         "ones"};

/** Keras's initializer `name` on t, with Keras's fans: the last dim is fan-out, the one before
 *  fan-in, each times the product of the dims before (the receptive field). Keras's normal
 *  initializers draw from a normal truncated at two standard deviations. */
void initialize(Tensor& t, const std::string& name) {
  if (name == "zeros" || name == "ones") {
    name == "zeros" ? init::zeros_(t) : init::ones_(t);
    return;
  }
  int64_t receptive = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) receptive *= t.size(d);
  const double fan_in = static_cast<double>(receptive * (t.dim() > 1 ? t.size(-2) : t.size(-1)));
  const double fan_out = static_cast<double>(receptive * t.size(-1));
  const double variance = name.starts_with("glorot") ? 2 / (fan_in + fan_out) : 2 / fan_in;
  if (name.ends_with("uniform")) {
    const double limit = std::sqrt(3 * variance);
    init::uniform_(t, -limit, limit);
  } else {
    const double std = std::sqrt(variance) / 0.87962566103423978;  // a unit normal truncated at +-2's std
    init::trunc_normal_(t, 0, std, -2 * std, 2 * std);
  }
}

Tensor initialized(const Dims& shape, const std::string& name, DType dtype) {
  NoGradGuard no_grad;
  Tensor t = empty(shape, {.dtype = dtype, .device = {}});
  initialize(t, name);
  return t;
}

Tensor channels_first(const Tensor& x) {
  Dims order = {0, x.dim() - 1};
  for (int64_t d = 1; d + 1 < x.dim(); ++d) order.push_back(d);
  return x.permute(order);
}

Tensor channels_last(const Tensor& x) {
  Dims order = {0};
  for (int64_t d = 2; d < x.dim(); ++d) order.push_back(d);
  order.push_back(1);
  return x.permute(order);
}

/** TensorFlow's "same" padding of x's (channels first) spatial dims: ceil(n / stride) outputs,
 *  an odd total puts the extra one after. */
Pads same_pads(const Tensor& x, const Dims& kernel, const Dims& strides, const Dims& dilation) {
  Pads pads;
  for (size_t i = 0; i < kernel.size(); ++i) {
    const int64_t n = x.size(static_cast<int64_t>(i) + 2), s = strides[i];
    const int64_t total = std::max<int64_t>(((n + s - 1) / s - 1) * s + (kernel[i] - 1) * dilation[i] + 1 - n, 0);
    pads.emplace_back(total / 2, total - total / 2);
  }
  return pads;
}

/** x (channels first) padded by pads with value. */
Tensor padded(const Tensor& x, const Pads& pads, double value = 0) {
  Dims flat;  // pad's order: the last dim first
  for (auto it = pads.rbegin(); it != pads.rend(); ++it) {
    flat.push_back(it->first);
    flat.push_back(it->second);
  }
  if (std::all_of(flat.begin(), flat.end(), [](int64_t p) { return p == 0; })) return x;
  return pad(x, flat, "constant", Scalar(value));
}

void check_rank(const Tensor& x, int rank, const std::string& layer) {
  if (x.dim() == rank + 2) return;
  std::string dims = "batch, ";
  for (int i = 0; i < rank; ++i) dims += "spatial, ";
  fail("[", layer, "] expected a ", rank + 2, "-D input (", dims, "channels), got shape ", x.shape());
}

}  // namespace

KerasConvImpl::KerasConvImpl(std::string type_name, int rank, int64_t filters, Dims kernel_size,
                             KerasConvOptions options)
    : Module(std::move(type_name)),
      rank_(rank),
      filters_(filters),
      options_(std::move(options)),
      dtypes_(options_.dtype) {
  const std::string& layer = this->type_name();
  if (filters <= 0) fail("[", layer, "] filters must be a positive int, got ", filters);
  if (options_.groups <= 0 || filters % options_.groups)
    fail("[", layer, "] groups must be a positive int dividing filters (", filters, "), got ", options_.groups);
  kernel_size_ = per_dim(kernel_size, rank, layer, "kernel_size");
  options_.strides = per_dim(options_.strides, rank, layer, "strides");
  options_.dilation_rate = per_dim(options_.dilation_rate, rank, layer, "dilation_rate");
  options_.padding = option(
      options_.padding,
      rank == 1 ? std::vector<std::string>{"valid", "same", "causal"} : std::vector<std::string>{"valid", "same"},
      layer, "padding");
  options_.data_format = data_format_option(options_.data_format, layer);
  options_.kernel_initializer = option(options_.kernel_initializer, kInitializers, layer, "kernel_initializer");
  options_.bias_initializer = option(options_.bias_initializer, kInitializers, layer, "bias_initializer");
  activation_ = activation(options_.activation);
  options_.name = keras_layer_name(layer, options_.name);
  register_parameter("kernel", Tensor());
  register_parameter("bias", Tensor());
}

void KerasConvImpl::build(int64_t channels) {
  if (channels % options_.groups)
    fail("[", type_name(), "] the input's ", channels, " channels are not divisible by groups=", options_.groups);
  Dims shape = kernel_size_;
  shape.push_back(channels / options_.groups);
  shape.push_back(filters_);
  register_parameter("kernel", empty(shape, {.dtype = weight_dtype(), .device = {}}));
  if (options_.use_bias) register_parameter("bias", empty({filters_}, {.dtype = weight_dtype(), .device = {}}));
  built_ = true;
  reset_parameters();
}

void KerasConvImpl::reset_parameters() {
  if (!built_) return;
  NoGradGuard no_grad;
  initialize(kernel(), options_.kernel_initializer);
  if (options_.use_bias) initialize(bias(), options_.bias_initializer);
}

void KerasConvImpl::load_lazy_shapes(const TensorDict& state, const std::string& prefix) {
  const Tensor* k = state.find(prefix + "kernel");
  if (!built_ && k && k->dim() == rank_ + 2) build(k->size(-2) * options_.groups);
}

Tensor KerasConvImpl::forward(const Tensor& x) {
  check_rank(x, rank_, type_name());
  const bool last = options_.data_format == "channels_last";
  if (!built_) build(x.size(last ? -1 : 1));
  Tensor in = last ? channels_first(x) : x;
  const Dims& strides = options_.strides;
  const Dims& dilation = options_.dilation_rate;
  Dims padding(static_cast<size_t>(rank_), 0);
  if (options_.padding == "causal") {  // Keras's causal Conv1D: all the padding before
    in = padded(in, {{(kernel_size_[0] - 1) * dilation[0], 0}});
  } else if (options_.padding == "same") {
    Pads pads = same_pads(in, kernel_size_, strides, dilation);
    if (std::all_of(pads.begin(), pads.end(), [](const auto& p) { return p.first == p.second; }))
      for (int i = 0; i < rank_; ++i) padding[i] = pads[i].first;
    else in = padded(in, pads);
  }
  Dims order = {rank_ + 1, rank_};  // Keras's [*kernel_size, in, out] as [out, in, *kernel_size]
  for (int64_t d = 0; d < rank_; ++d) order.push_back(d);
  const Tensor weight = kernel().permute(order);
  std::optional<Tensor> b;
  if (options_.use_bias) b = bias();
  std::optional<AutocastGuard> mixed;  // else an enclosing autocast region still applies
  if (compute_dtype()) mixed.emplace(x.device().type, *compute_dtype());
  else in = dtypes_.cast_input(in);
  Tensor y = rank_ == 1 ? conv1d(in, weight, b, strides, padding, dilation, options_.groups)
                        : conv2d(in, weight, b, strides, padding, dilation, options_.groups);
  if (last) y = channels_last(y);
  return activation_ ? activation_(y) : y;
}

std::string KerasConvImpl::extra_repr() const {
  return "filters=" + std::to_string(filters_) + ", kernel_size=" + tuple_repr(kernel_size_) +
         ", strides=" + tuple_repr(options_.strides) + ", padding='" + options_.padding + "', data_format='" +
         options_.data_format + "'";
}

KerasPoolImpl::KerasPoolImpl(std::string type_name, int rank, bool max, Dims pool_size, KerasPoolOptions options)
    : Module(std::move(type_name)), rank_(rank), max_(max), options_(std::move(options)) {
  const std::string& layer = this->type_name();
  pool_size_ = per_dim(pool_size, rank, layer, "pool_size");
  options_.strides = options_.strides.empty() ? pool_size_ : per_dim(options_.strides, rank, layer, "strides");
  options_.padding = option(options_.padding, {"valid", "same"}, layer, "padding");
  options_.data_format = data_format_option(options_.data_format, layer);
  options_.name = keras_layer_name(layer, options_.name);
}

Tensor KerasPoolImpl::forward(const Tensor& x) {
  check_rank(x, rank_, type_name());
  const bool last = options_.data_format == "channels_last";
  Tensor in = last ? channels_first(x) : x;
  const Dims& strides = options_.strides;
  Pads pads(static_cast<size_t>(rank_), {0, 0});
  if (options_.padding == "same") pads = same_pads(in, pool_size_, strides, Dims(static_cast<size_t>(rank_), 1));
  const auto pool = [&](const Tensor& t) {
    if (max_) return rank_ == 1 ? max_pool1d(t, pool_size_, strides) : max_pool2d(t, pool_size_, strides);
    return rank_ == 1 ? avg_pool1d(t, pool_size_, strides) : avg_pool2d(t, pool_size_, strides);
  };
  // A max pads with -inf, so that a padded position never wins, as in TensorFlow.
  Tensor y = pool(padded(in, pads, max_ ? -std::numeric_limits<double>::infinity() : 0));
  const bool any_pad = std::any_of(pads.begin(), pads.end(), [](const auto& p) { return p.first || p.second; });
  if (!max_ && any_pad) {
    // TensorFlow averages over the window's positions inside the input only: divide by the
    // share of the window that is not padding.
    Dims shape = {1, 1};
    for (int64_t d = 2; d < in.dim(); ++d) shape.push_back(in.size(d));
    y = y / pool(padded(ones(shape, {.dtype = in.dtype(), .device = in.device()}), pads));
  }
  return last ? channels_last(y) : y;
}

std::string KerasPoolImpl::extra_repr() const {
  return "pool_size=" + tuple_repr(pool_size_) + ", strides=" + tuple_repr(options_.strides) + ", padding='" +
         options_.padding + "', data_format='" + options_.data_format + "'";
}

KerasGlobalPoolImpl::KerasGlobalPoolImpl(std::string type_name, int rank, bool max, std::string data_format_name,
                                         bool keepdims, std::string name)
    : Module(std::move(type_name)), rank_(rank), max_(max), keepdims_(keepdims) {
  data_format_ = data_format_option(data_format_name, this->type_name());
  name_ = keras_layer_name(this->type_name(), name);
}

Tensor KerasGlobalPoolImpl::forward(const Tensor& x) {
  check_rank(x, rank_, type_name());
  const int64_t first = data_format_ == "channels_last" ? 1 : 2;
  Dims dims;
  for (int64_t d = first; d < first + rank_; ++d) dims.push_back(d);
  return max_ ? x.amax(dims, keepdims_) : x.mean(dims, keepdims_);
}

std::string KerasGlobalPoolImpl::extra_repr() const {
  return "data_format='" + data_format_ + "', keepdims=" + (keepdims_ ? "True" : "False");
}

BatchNormalizationImpl::BatchNormalizationImpl(BatchNormalizationOptions options)
    : Module("BatchNormalization"), options_(std::move(options)), dtypes_(options_.dtype) {
  for (std::string* init : {&options_.beta_initializer, &options_.gamma_initializer, &options_.moving_mean_initializer,
                            &options_.moving_variance_initializer})
    *init = option(*init, kInitializers, "BatchNormalization", "an initializer");
  options_.name = keras_layer_name("BatchNormalization", options_.name);
}

void BatchNormalizationImpl::build(const Shape& input_shape) {
  const auto rank = static_cast<int64_t>(input_shape.size());
  if (options_.axis < -rank || options_.axis >= rank)
    fail("[BatchNormalization] axis ", options_.axis, " is out of range for an input of shape ", input_shape);
  make(input_shape[static_cast<size_t>(options_.axis < 0 ? options_.axis + rank : options_.axis)]);
}

void BatchNormalizationImpl::make(int64_t size) {
  if (options_.scale) register_parameter("gamma", initialized({size}, options_.gamma_initializer, weight_dtype()));
  if (options_.center) register_parameter("beta", initialized({size}, options_.beta_initializer, weight_dtype()));
  register_buffer("moving_mean", initialized({size}, options_.moving_mean_initializer, weight_dtype()));
  register_buffer("moving_variance", initialized({size}, options_.moving_variance_initializer, weight_dtype()));
  built_ = true;
}

void BatchNormalizationImpl::load_lazy_shapes(const TensorDict& state, const std::string& prefix) {
  const Tensor* mean = state.find(prefix + "moving_mean");
  if (!built_ && mean && mean->dim() == 1) make(mean->size(0));
}

Tensor BatchNormalizationImpl::forward(const Tensor& input) {
  if (!built_) build(input.shape());
  const Tensor cast = dtypes_.cast_input(input);
  // Keras normalizes a 16-bit input in float32: its sums of squares overflow float16.
  const bool narrow = cast.dtype() == DType::Float16 || cast.dtype() == DType::BFloat16;
  const Tensor x = narrow ? cast.to(DType::Float32) : cast;
  const int64_t axis = options_.axis < 0 ? options_.axis + x.dim() : options_.axis;
  if (axis < 0 || axis >= x.dim())
    fail("[BatchNormalization] axis ", options_.axis, " is out of range for an input of shape ", x.shape());
  Dims dims, shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != axis) dims.push_back(d);
    shape.push_back(d == axis ? -1 : 1);
  }
  Tensor mean = buffer("moving_mean"), variance = buffer("moving_variance");
  if (is_training()) {
    mean = x.mean(dims);
    variance = x.var(dims, 0);
    NoGradGuard no_grad;
    const double keep = options_.momentum;
    buffer("moving_mean").mul_(keep).add_(mean.detach() * (1 - keep));
    buffer("moving_variance").mul_(keep).add_(variance.detach() * (1 - keep));
  }
  Tensor y = (x - mean.reshape(shape)) * (variance.reshape(shape) + options_.epsilon).rsqrt();
  if (options_.scale) y = y * parameter("gamma").reshape(shape);
  if (options_.center) y = y + parameter("beta").reshape(shape);
  return narrow ? y.to(cast.dtype()) : y;
}

std::string BatchNormalizationImpl::extra_repr() const {
  std::ostringstream out;
  out << "axis=" << options_.axis << ", momentum=" << options_.momentum << ", epsilon=" << options_.epsilon;
  return out.str();
}

}  // namespace ug::nn
