// Keras's mixed-precision policies (keras.mixed_precision): "mixed_float16" and
// "mixed_bfloat16" keep variables in float32 and compute in the 16-bit dtype; "float32" (the
// default) computes in float32. A layer takes the global policy when it is built (Keras's
// rule: changing the policy later leaves existing layers alone); fit() runs its forward pass
// and loss under autocast in the compute dtype and, with float16, scales the loss
// (Keras's LossScaleOptimizer: dynamic, from 2^15, growing every 2000 finite steps).
#pragma once

#include <optional>
#include <string>

#include "ug/core/dtype.h"

namespace ug::mixed_precision {

struct Policy {
  std::string name = "float32";
  DType compute_dtype = DType::Float32;
  DType variable_dtype = DType::Float32;
  /** The dtype autocast should run in, when it differs from the variables'. */
  std::optional<DType> autocast_dtype() const {
    return compute_dtype == variable_dtype ? std::nullopt : std::optional<DType>(compute_dtype);
  }
};

/** "float32", "float64", "float16", "bfloat16", "mixed_float16" or "mixed_bfloat16". */
Policy policy(const std::string& name);
void set_global_policy(const std::string& name);
Policy global_policy();
/** A layer's policy (Keras's dtype= argument): the one `dtype` names, else ("") the global one. */
Policy layer_policy(const std::string& dtype);
/** The dtype a layer under `p` makes its weights in: p's variable dtype, but the default dtype
 *  (set_default_dtype(float64) makes float64 weights) under the default global policy, which
 *  a policy the layer's dtype= names (`given`) is not. */
DType weight_dtype(const Policy& p, bool given);

}  // namespace ug::mixed_precision
