// The autograd side of an op call. Ops reach it through graph::OpCall (op_call.h), which
// links the outputs to a node holding the op's vjp rule; the rule is written with ops, so it
// is itself recorded when create_graph is on: that is how second and third derivatives work.
#pragma once

#include <initializer_list>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"

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

}  // namespace ug::autograd
