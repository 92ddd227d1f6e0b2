// jax.lax.cond for programs: with a predicate that a trace cannot know (a traced value), the
// choice is one op that a compiled program makes at every run (an ONNX If holding both
// branches' ops); the other branch does not run, so its values (a log of zero, a square root of
// a negative number) cannot reach the result or its gradient. Its derivatives are conds of the
// branches' derivatives.
#pragma once

#include <functional>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::lax {

using Branch = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/** true_fn(operands) if pred holds, else false_fn(operands); both give the same number of
 *  tensors, of the same shapes and dtypes. Outside a capture the branch runs as it is (and
 *  records its own derivatives). Under one (ug.jit) both branches run and are recorded, and the
 *  call is one op whose program runs the branch the run's predicate picks, reading what the
 *  branches close over at that run: they must not close over tensors that require grad (pass
 *  them as operands), since only the operands' gradients go through the op. */
std::vector<Tensor> cond(const Tensor& pred, const Branch& true_fn, const Branch& false_fn,
                         const std::vector<Tensor>& operands);

}  // namespace ug::lax
