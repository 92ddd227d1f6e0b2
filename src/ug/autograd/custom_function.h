// User-defined derivatives: torch.autograd.Function, jax.custom_vjp and jax.custom_jvp, and
// tf.custom_gradient all end here. The caller computes a function's outputs without
// recording; custom_function links them to one node whose backward is the caller's and,
// under forward mode, gives them the tangents of the caller's rule.
//
//   Tensor y = ug::exp(x.detach());   // no history: the node below is y's
//   y = ug::custom_function("Exp", {x}, {y}, [](const Tensors& saved, const Tensors& g) {
//         return Tensors{g[0] * saved[0]};
//       }, {}, {y})[0];
#pragma once

#include <functional>

#include "ug/autograd/functional.h"

namespace ug {

/** The gradients of a custom function's inputs (one per input; undefined: none) from those
 *  of its outputs (one per output; zeros where an output got none) and the tensors it saved.
 *  Written with ops, it is recorded under create_graph, which gives higher derivatives. */
using CustomVjp = std::function<Tensors(const Tensors& saved, const Tensors& grad_outputs)>;
/** The tangents of the outputs (one per output; undefined: none) from those of the inputs
 *  (undefined where an input has none). */
using CustomJvp = std::function<Tensors(const Tensors& input_tangents)>;

/** `outputs`, computed from `inputs` without history (under NoGradGuard, from detached
 *  inputs), differentiating as vjp and jvp say: new tensors sharing their data. `saved` are
 *  what vjp reads back, checked against in-place changes as every op's are: an input keeps
 *  its history (so higher derivatives reach it), one of `outputs` is kept without it and
 *  comes back as the returned output (the node's own, with no reference cycle). Without a
 *  jvp, forward mode through them raises, as jax.custom_vjp does. `name` is the node's name
 *  in error messages and anomaly traces. */
Tensors custom_function(const char* name, const Tensors& inputs, const Tensors& outputs, CustomVjp vjp,
                        CustomJvp jvp = {}, const Tensors& saved = {});

}  // namespace ug
