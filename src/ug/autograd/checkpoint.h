// Activation checkpointing: torch.utils.checkpoint (use_reentrant=False) and jax.checkpoint.
// The function runs with saved-tensor hooks that keep none of what its ops save for
// backward (or only what the policy names); the first unpack in backward runs the function
// again, with the random-number state and the autocast state of the first run, and hands out
// the tensors that run saved. Memory falls to the inputs of each checkpointed region; time
// grows by one forward pass of it.
//
//   Tensors y = ug::checkpoint([&](const Tensors& x) { return Tensors{block->forward(x[0])}; }, {x});
#pragma once

#include <functional>

#include "ug/autograd/functional.h"

namespace ug {

/** Which saved tensors to keep, by the op that saves them ("matmul", "linear", ...); the
 *  others are recomputed. Empty: keep none (jax.checkpoint_policies.nothing_saveable). */
using CheckpointPolicy = std::function<bool(const char* op)>;

/** fn(inputs), keeping for backward only the tensors `keep` names and recomputing the rest. */
Tensors checkpoint(const TensorFn& fn, const Tensors& inputs, const CheckpointPolicy& keep = {});

}  // namespace ug
