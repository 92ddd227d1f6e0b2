// The functional (optax-style) face of the optimizers: `auto state = opt.init(params);`,
// `auto [updates, next] = opt.update(grads, state, params);`,
// `params = apply_updates(params, updates);`. init/update are Optimizer members and run the
// same update rules as step(); this file holds what goes around them.
#pragma once

#include <vector>

#include "ug/optim/optimizer.h"

namespace ug::optim {

/** params + updates, name by name, as new tensors (inputs untouched). A result requires grad
 *  when its parameter did, so it can stand in for it in the next forward pass. */
TensorDict apply_updates(const TensorDict& params, const TensorDict& updates);
std::vector<Tensor> apply_updates(const std::vector<Tensor>& params, const std::vector<Tensor>& updates);

/** A list as a dict named "0", "1", ..., and back, so lists go through init/update too. */
TensorDict as_dict(const std::vector<Tensor>& tensors);
std::vector<Tensor> as_list(const TensorDict& dict);

}  // namespace ug::optim
