// User-defined derivatives: torch.autograd.Function, jax.custom_vjp and jax.custom_jvp, and
// tf.custom_gradient all end here. A custom function computes its outputs without recording
// and links them to one node whose backward is its rule and, under forward mode, gives them
// the tangents of its forward rule:
//
//   Tensor y = ug::custom_function("Exp", {x}, [](const Tensors& in) {
//     Tensor e = in[0].exp();              // in: x detached; no history, the node is e's
//     return ug::CustomForward{{e}, [](const Tensors& saved, const Tensors& g) {
//       return Tensors{g[0] * saved[0]};
//     }, {}, {e}};
//   })[0];
//
// A compiled program (ug::jit) holds the ops a trace ran, not rules: the whole call is one
// op of the trace ("custom_function", its forward's ops as its parts), which a program runs as
// those parts, or, when autograd records through the run (grad of jit) or it carries
// tangents, calls back so that the rule is linked again.
#pragma once

#include <functional>

#include "ug/autograd/functional.h"
#include "ug/graph/capture.h"

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
 *  in error messages and anomaly traces. Inside vmap, derivatives taken outside it (grad of
 *  vmap) apply the rules too: they run at the inputs' vmap level, the sum over the batch going
 *  to an input not mapped there. */
Tensors custom_function(const char* name, const Tensors& inputs, const Tensors& outputs, CustomVjp vjp,
                        CustomJvp jvp = {}, const Tensors& saved = {});

/** What a custom function's forward gives: its outputs and the rules the overload above takes. */
struct CustomForward {
  Tensors outputs;
  CustomVjp vjp;
  CustomJvp jvp = {};
  Tensors saved = {};
};

/** The custom function `forward` on `inputs`: forward runs without recording on the inputs
 *  detached, and its outputs are linked as the overload above links them; a trace records the
 *  call as one op (custom_call). */
Tensors custom_function(const char* name, const Tensors& inputs,
                        std::function<CustomForward(const Tensors& detached)> forward);

/** Runs `run` (a custom function's whole call on `inputs`, which links its outputs with the
 *  overloads above, or does not when nothing is differentiated) and returns its outputs. Under
 *  a capture (jit, onnx.export) the call is one op, "custom_function" named `name`, whose parts
 *  are the ops `run` made; a program whose run records autograd or carries tangents calls
 *  `again` on its inputs instead, which must make the same call (the rule is linked anew). */
Tensors custom_call(const char* name, const Tensors& inputs, const std::function<Tensors()>& run, graph::Replay again);

}  // namespace ug
