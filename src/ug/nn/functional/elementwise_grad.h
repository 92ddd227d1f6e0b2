// A shared helper for activations whose composed form would get a kink or an overflow
// wrong: compute the value with ops under no_grad, then record one node whose rule is
// the derivative written with ops (so double backward still works). The whole call is a
// custom function's (autograd/custom_function.h): a compiled program runs the value's ops, or
// calls it back where autograd records through the run, so that the node is recorded again.
#pragma once

#include <functional>

#include "ug/autograd/custom_function.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/record.h"
#include "ug/core/tensor.h"

namespace ug::nn::functional::detail {

/** Returns value(x) (run without recording), with d/dx given by grad(g, x). An elementwise
 *  value's forward-mode rule is grad(tangent, x); any other's raises, as torch's does. A custom
 *  function's (so grad of vmap of it applies grad too). */
inline Tensor with_derivative(const char* name, const Tensor& x, const std::function<Tensor(const Tensor&)>& value,
                              std::function<Tensor(const Tensor&, const Tensor&)> grad, bool elementwise = true) {
  auto call = [name, value, grad = std::move(grad), elementwise](const Tensor& input) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = value(input.detach());
    }
    CustomJvp jvp;
    if (elementwise) jvp = [&grad, &input](const Tensors& t) { return Tensors{grad(t[0], input)}; };
    auto vjp = [grad](const Tensors& s, const Tensors& g) { return Tensors{grad(g[0], s[0])}; };
    return custom_function(name, {input}, {y}, vjp, jvp, {input})[0];
  };
  return custom_call(
      name, {x}, [&] { return Tensors{call(x)}; }, [call](const Tensors& in) { return Tensors{call(in[0])}; })[0];
}

/** fn(x), or with torch's `inplace=True` fn(x) written into x (its version counter moves on) and
 *  x returned. While recording, fn reads a copy of x: what its derivative saves of its input
 *  must not be the x that the write overwrites. */
inline Tensor maybe_inplace(const Tensor& x, bool inplace, const std::function<Tensor(const Tensor&)>& fn) {
  if (!inplace) return fn(x);
  Tensor y = fn(autograd::needs_grad({&x}) ? x.clone() : x);
  Tensor out = x;
  out.copy_(y);
  return out;
}

}  // namespace ug::nn::functional::detail
