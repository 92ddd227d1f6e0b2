#include "ug/nn/layers/linear.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "ug/graph/grad_mode.h"
#include "ug/nn/init.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/mixed_precision.h"
#include "ug/ops/autocast.h"
#include "ug/nn/functional/linear.h"

namespace ug::nn {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool bias, std::optional<DType> dtype)
    : LinearImpl("Linear", in_features, out_features, bias, dtype.value_or(get_default_dtype()),
                 mixed_precision::global_policy().autocast_dtype()) {
  if (in_features >= 0) reset_parameters();
}

LinearImpl::LinearImpl(std::string type_name, int64_t in_features, int64_t out_features, bool bias, DType dtype,
                       std::optional<DType> compute_dtype)
    : Module(std::move(type_name)),
      in_features_(-1),
      out_features_(out_features),
      has_bias_(bias),
      dtype_(dtype),
      compute_dtype_(compute_dtype) {
  if (out_features <= 0) fail("[", this->type_name(), "] out_features must be positive, got ", out_features);
  if (!is_floating(dtype)) fail<TypeError>("[", this->type_name(), "] needs a floating dtype, got ", dtype);
  register_parameter("weight", Tensor());
  register_parameter("bias", Tensor());
  if (in_features >= 0) materialize(in_features);
}

void LinearImpl::materialize(int64_t in_features) {
  in_features_ = in_features;
  register_parameter("weight", empty({out_features_, in_features}, {.dtype = dtype_, .device = {}}));
  if (has_bias_) register_parameter("bias", empty({out_features_}, {.dtype = dtype_, .device = {}}));
}

void LinearImpl::reset_parameters() {
  if (in_features_ < 0) return;
  // PyTorch: kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)), for both.
  init::kaiming_uniform_(weight(), std::sqrt(5.0));
  if (has_bias_) {
    const double bound = in_features_ > 0 ? 1 / std::sqrt(static_cast<double>(in_features_)) : 0;
    init::uniform_(bias(), -bound, bound);
  }
}

void LinearImpl::build(int64_t in_features) {
  if (type_name().starts_with("Lazy")) set_type_name(type_name().substr(4));
  materialize(in_features);
  reset_parameters();
}

void LinearImpl::load_lazy_shapes(const TensorDict& state, const std::string& prefix) {
  const Tensor* w = state.find(prefix + "weight");
  if (in_features_ < 0 && w && w->dim() == 2) build(w->size(1));
}

Tensor LinearImpl::forward(const Tensor& x) {
  if (in_features_ < 0) {
    if (x.dim() == 0) fail("[", type_name(), "] expected an input with a feature dim, got a scalar");
    build(x.size(-1));
  }
  if (x.dim() == 0 || x.size(-1) != in_features_)
    fail("[", type_name(), "] expected input with last dim ", in_features_, ", got shape ", x.shape());
  std::optional<AutocastGuard> mixed;
  if (compute_dtype_) mixed.emplace(x.device().type, *compute_dtype_);
  return functional::linear(x, weight(), bias());
}

std::string LinearImpl::extra_repr() const {
  // A lazy layer's in_features prints as 0, as torch's LazyLinear's.
  return "in_features=" + std::to_string(std::max<int64_t>(in_features_, 0)) +
         ", out_features=" + std::to_string(out_features_) + ", bias=" + (has_bias_ ? "True" : "False");
}

DenseImpl::DenseImpl(int64_t units, const std::string& activation_name, int64_t input_dim, bool use_bias,
                     const std::string& dtype, bool flatten, const std::string& name)
    : LinearImpl("Dense", input_dim, units, use_bias,
                 mixed_precision::weight_dtype(mixed_precision::layer_policy(dtype), !dtype.empty()),
                 mixed_precision::layer_policy(dtype).autocast_dtype()),
      policy_(mixed_precision::layer_policy(dtype)),
      activation_name_(activation_name),
      name_(keras_layer_name("Dense", name)),
      flatten_(flatten),
      activation_(activation(activation_name)) {
  if (input_dim >= 0) reset_parameters();
}

void DenseImpl::reset_parameters() {
  if (in_features() < 0) return;
  init::xavier_uniform_(weight());
  if (bias().defined()) init::zeros_(bias());
}

Tensor DenseImpl::forward(const Tensor& x) {
  Tensor in = x;
  if (flatten_) {
    // Gluon's flatten: (N, d1, d2, ...) as (N, d1 * d2 * ...); a 1-D batch is N inputs of size 1.
    if (x.dim() == 0) fail("[Dense] flatten=True needs a batch dim first, got a scalar");
    int64_t features = 1;
    for (int64_t d = 1; d < x.dim(); ++d) features *= x.size(d);
    if (in_features() >= 0 && features != in_features())
      fail("[Dense] expected ", in_features(), " features after flattening the dims after the first, got shape ",
           x.shape());
    in = x.reshape({x.size(0), features});
  }
  std::optional<AutocastGuard> mixed;
  if (compute_dtype()) {
    mixed.emplace(x.device().type, *compute_dtype());  // the activation too
  } else if (in.is_floating_point() && in.dim() > 0) {
    // Keras casts a floating input to the layer's compute dtype (float16 under "float16").
    if (in_features() < 0) build(in.size(-1));
    if (in.dtype() != weight().dtype()) in = in.to(weight().dtype());
  }
  Tensor y = LinearImpl::forward(in);
  return activation_ ? activation_(y) : y;
}

std::string DenseImpl::extra_repr() const {
  return "units=" + std::to_string(out_features()) +
         (activation_name_.empty() ? "" : ", activation=\"" + activation_name_ + "\"") +
         (flatten_ ? ", flatten=True" : "");
}

std::string keras_layer_name(const std::string& type_name, const std::string& name) {
  if (!name.empty()) return name;
  // Keras's to_snake_case: an underscore before each capitalized word and each capital after a
  // lower-case letter, so "MaxPooling2D" is "max_pooling2d".
  std::string base;
  for (size_t i = 0; i < type_name.size(); ++i) {
    const char c = type_name[i];
    const bool word = i > 0 && std::isupper(c) && i + 1 < type_name.size() && std::islower(type_name[i + 1]);
    if (word || (i > 0 && std::isupper(c) && std::islower(type_name[i - 1]))) base += '_';
    base += static_cast<char>(std::tolower(c));
  }
  static std::mutex mutex;
  static std::unordered_map<std::string, int64_t> counts;
  std::lock_guard lock(mutex);
  const int64_t n = counts[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

std::string FlattenImpl::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim_) + ", end_dim=" + std::to_string(end_dim_);
}

UnflattenImpl::UnflattenImpl(int64_t dim, Dims unflattened_size)
    : Module("Unflatten"), dim_(dim), sizes_(std::move(unflattened_size)) {
  if (sizes_.empty()) fail("[Unflatten] unflattened_size cannot be empty");
  for (int64_t s : sizes_)
    if (s < -1) fail("[Unflatten] unflattened_size ", tuple_repr(sizes_), " holds a size below -1");
}

std::string UnflattenImpl::extra_repr() const {
  return "dim=" + std::to_string(dim_) + ", unflattened_size=" + tuple_repr(sizes_);
}

}  // namespace ug::nn
