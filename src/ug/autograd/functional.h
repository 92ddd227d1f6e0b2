// JAX's function transforms on the shared engine. A transform makes fresh inputs, runs the
// function with recording on, and asks the engine for gradients: it never reads or writes
// anyone's .grad. Gradient rules are written with ops, so transforms nest:
// grad(grad(f)), jacfwd(jacrev(f)) and hessian work to any order.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>
#include <string>

#include "ug/core/batching.h"
#include "ug/core/tensor.h"
#include "ug/ops/axis_collectives.h"

namespace ug {

using Tensors = std::vector<Tensor>;
/** The universal function type the transforms work on (Python flattens pytrees to it). */
using TensorFn = std::function<Tensors(const Tensors&)>;

/** The function's outputs and d(outputs[0])/d(args[i]) for i in argnums (outputs[0] must
 *  have one element; the other outputs are auxiliary data, returned as they are). */
std::pair<Tensors, Tensors> value_and_grad(const TensorFn& f, const Tensors& args, const std::vector<int>& argnums);

/** The outputs and a function mapping output cotangents to input cotangents. */
std::pair<Tensors, std::function<Tensors(const Tensors&)>> vjp(const TensorFn& f, const Tensors& primals);

/** The outputs and their directional derivatives along `tangents`, by forward mode: each
 *  op's forward rule carries the tangents through the function in one pass. */
std::pair<Tensors, Tensors> jvp(const TensorFn& f, const Tensors& primals, const Tensors& tangents);

/** d outputs[k] / d args[argnum], shaped outputs[k].shape + args[argnum].shape. */
Tensors jacrev(const TensorFn& f, const Tensors& args, int argnum = 0);
Tensors jacfwd(const TensorFn& f, const Tensors& args, int argnum = 0);
/** jacfwd(jacrev(f)): d^2 outputs[k] / d args[argnum]^2, shaped outputs[k].shape + arg.shape + arg.shape. */
Tensors hessian(const TensorFn& f, const Tensors& args, int argnum = 0);
/** The matrix of second derivatives of a one-element output, shaped x.shape + x.shape. */
Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x);

/** f mapped over a batch dim: in_axes[i] is the dim of args[i] to map over (nullopt: the
 *  argument is shared), out_axes[k] where the batch dim goes in output k (nullopt: output k
 *  must not depend on the batch and comes back unbatched, jax.vmap's out_axes=None; empty:
 *  every output at 0). out_axes is read after f returns, so a caller that learns the outputs'
 *  structure inside f may fill it then. Every mapped argument must have the same size along
 *  its axis, axis_size if given (which lets no argument be mapped). f runs once on batched
 *  tensors, each op applying its batching rule; if an op has none, f runs once per example.
 *  axis_name binds a name to the mapped axis while f runs, as jax.vmap's: lax::psum(x, name)
 *  and the other collectives of ug/ops/axis_collectives.h reduce or move x along it.
 *  randomness says what draws from the global generator do inside f, as torch.func.vmap's:
 *  Error raises, Same draws once for every example, Different draws for each example apart. */
Tensors vmap(const TensorFn& f, const Tensors& args, const std::vector<std::optional<int64_t>>& in_axes,
             const std::vector<std::optional<int64_t>>& out_axes, std::optional<int64_t> axis_size = std::nullopt,
             const std::optional<std::string>& axis_name = std::nullopt, Randomness randomness = Randomness::Error);

/** How many vmap calls fell back to one call per example (an op without a batching rule). */
int64_t vmap_fallbacks();
/** Why this thread's last such call did ("[vmap] op 'X' has no batching rule ..."); "" if none. */
std::string last_vmap_fallback();

/** ug::grad(f)(x) for f: Tensor -> one-element Tensor, as in jax.grad. */
inline std::function<Tensor(const Tensor&)> grad(std::function<Tensor(const Tensor&)> f) {
  return [f = std::move(f)](const Tensor& x) {
    auto [out, grads] = value_and_grad([&f](const Tensors& a) { return Tensors{f(a[0])}; }, {x}, {0});
    return grads[0];
  };
}

/** ug::value_and_grad(f)(x) -> {f(x), df/dx}. */
inline std::function<std::pair<Tensor, Tensor>(const Tensor&)> value_and_grad(std::function<Tensor(const Tensor&)> f) {
  return [f = std::move(f)](const Tensor& x) {
    auto [out, grads] = value_and_grad([&f](const Tensors& a) { return Tensors{f(a[0])}; }, {x}, {0});
    return std::make_pair(out[0], grads[0]);
  };
}

}  // namespace ug
