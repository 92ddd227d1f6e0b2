// A Keras layer's dtype policy (its dtype= argument, keras.layers.Layer's): the policy it
// names, else the global one when the layer is made, and the dtypes that follow from it.
#pragma once

#include <optional>
#include <string>

#include "ug/core/tensor.h"
#include "ug/nn/mixed_precision.h"

namespace ug::nn {

class KerasDtype {
 public:
  /** `dtype`: a policy name ("float64", "mixed_bfloat16", ...); "" the global policy. */
  explicit KerasDtype(const std::string& dtype);
  const mixed_precision::Policy& policy() const { return policy_; }
  /** The weights' dtype: the policy's (the default dtype under the default global policy). */
  DType weights() const { return weights_; }
  /** A mixed policy's 16-bit dtype, which the layer computes in; none where that is the weights'. */
  std::optional<DType> mixed() const { return policy_.autocast_dtype(); }
  /** x in the dtype the layer computes in where x is floating, as Keras's Layer.__call__ casts. */
  Tensor cast_input(const Tensor& x) const;

 private:
  mixed_precision::Policy policy_;
  DType weights_;
};

}  // namespace ug::nn
