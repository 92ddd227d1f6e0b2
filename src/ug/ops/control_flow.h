// Structured control flow with a data-dependent trip count (jax.lax.while_loop) for programs:
// the loop is one op whose call keeps one iteration of the body as its parts, which the
// exporter turns into an ONNX Loop node (docs/design.md, "Compiled mode").
#pragma once

#include <functional>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

using LoopCond = std::function<Tensor(const std::vector<Tensor>&)>;
using LoopBody = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/** carry = body(carry) while cond(carry), from `init`. cond gives a one-element bool tensor,
 *  body a carry of the same count, shapes and dtypes. Outside a capture it runs as a loop; under
 *  one (ug.jit) the call records cond(init), then one iteration of body and cond on stand-ins
 *  of the carry as its parts, and returns the loop's result computed without recording. It has
 *  no reverse-mode derivative (as in JAX): backward through it raises. */
std::vector<Tensor> while_loop(const LoopCond& cond, const LoopBody& body, const std::vector<Tensor>& init);

}  // namespace ug
