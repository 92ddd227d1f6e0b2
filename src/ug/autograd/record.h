// How an op records itself for autograd, next to its forward code:
//
//   Tensor out = ...forward...;
//   if (autograd::needs_grad({&x}))
//     autograd::record("exp", {x}, {&out}, [y = autograd::save_output(out)](auto&& g, Node* n) {
//       return grads{g[0] * y.unpack(n, "exp")};
//     });
//
// The rule is written with ops, so it is itself recorded when create_graph is on: that is
// how second and third derivatives work.
#pragma once

#include <initializer_list>
#include <vector>

#include "ug/autograd/grad_mode.h"
#include "ug/autograd/node.h"

namespace ug::autograd {

inline bool requires_grad(const Tensor& t) {
  const AutogradMeta* m = static_cast<const AutogradMeta*>(t.impl().autograd_meta());
  return m && (m->requires_grad || m->grad_fn);
}

/** True when an op on these inputs records: grad mode is on and an input requires grad. */
inline bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && requires_grad(*t)) return true;
  return false;
}

inline SavedTensor save(const Tensor& t) { return SavedTensor(t, false); }
inline SavedTensor save_output(const Tensor& t) { return SavedTensor(t, true); }

/** Links `outputs` (floating ones only: integer and bool results are not differentiable)
 *  to a new node running `rule`, whose inputs are `inputs`. */
void record(const char* name, std::initializer_list<Tensor> inputs, std::initializer_list<const Tensor*> outputs,
            FunctionNode::Rule rule);
void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<const Tensor*>& outputs,
            FunctionNode::Rule rule);

/** Before an in-place op on t under grad mode: raises for leaves that require grad and for
 *  views when gradients are involved. Returns true when t (or the other operand) requires
 *  grad, so the op must run out of place and rebase t's history (see rebase_history). */
bool inplace_needs_rebase(const Tensor& t, const Tensor* other, const char* op);
/** Writes `result`'s data into t and makes t's history that of `result`. */
void rebase_history(const Tensor& t, const Tensor& result);

/** A zero tensor of `shape` whose `view` holds g: the gradient of an op that picks part of
 *  its input. Its own derivative takes the same view, so double backward works. */
Tensor embed(const Tensor& g, const Shape& shape, const std::function<Tensor(const Tensor&)>& view);

/** The gradient g of a broadcast result, summed back to `shape` (undoes broadcasting). */
Tensor sum_to(const Tensor& g, const Shape& shape);

}  // namespace ug::autograd
