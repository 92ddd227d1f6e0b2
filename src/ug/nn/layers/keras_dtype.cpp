#include "ug/nn/layers/keras_dtype.h"

namespace ug::nn {

KerasDtype::KerasDtype(const std::string& dtype)
    : policy_(mixed_precision::layer_policy(dtype)), weights_(mixed_precision::weight_dtype(policy_, !dtype.empty())) {}

Tensor KerasDtype::cast_input(const Tensor& x) const {
  const DType compute = mixed().value_or(weights_);
  return x.is_floating_point() && x.dtype() != compute ? x.to(compute) : x;
}

}  // namespace ug::nn
