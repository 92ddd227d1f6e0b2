// The autograd side of an op call. Ops reach it through graph::OpCall (op_call.h), which
// links the outputs to a node holding the op's vjp rule; the rule is written with ops, so it
// is itself recorded when create_graph is on: that is how second and third derivatives work.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"

namespace ug::graph {

/** A tensor the vjp rule reads back: an input of the call, an intermediate it computed, or
 *  (output = true) one of its outputs, kept without its history. A null tensor keeps nothing. */
struct Save {
  const Tensor* tensor = nullptr;
  bool is_output = false;
};
inline Save input(const Tensor& t) { return {&t, false}; }
inline Save output(const Tensor& t) { return {&t, true}; }
inline constexpr Save nothing{};

}  // namespace ug::graph

namespace ug::autograd {

inline bool requires_grad(const Tensor& t) {
  const AutogradMeta* m = static_cast<const AutogradMeta*>(t.impl().autograd_meta());
  return m && (m->requires_grad || m->grad_fn || (view_is_stale(t, *m) && requires_grad(m->view_base)));
}

/** True when an op on these inputs records: grad mode is on and an input requires grad. */
inline bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && requires_grad(*t)) return true;
  return false;
}

/** Edges to where the gradients of `inputs` flow; a null or undefined input gets none. */
std::vector<Edge> input_edges(std::span<const Tensor* const> inputs);
/** Makes `node` the grad_fn of the floating `outputs` (integer and bool results are not
 *  differentiable) and notes their shapes; in anomaly mode, where the op ran. */
void link_outputs(Node& node, std::span<const Tensor* const> outputs);

/** Links `outputs` to a new node running vjp (see RuleNode) over the tensors `saved` names,
 *  and returns those saved tensors (the outputs' grad_fn keeps them). graph::OpCall calls it
 *  for every op; a custom derivative around recorded ops (nn/functional's with_derivative)
 *  calls it directly. */
template <class Vjp>
std::vector<SavedTensor>& record(const char* name, std::span<const Tensor* const> inputs,
                                 std::span<const Tensor* const> outputs, std::span<const graph::Save> saved,
                                 Vjp&& vjp) {
  auto node = make_ref<RuleNode<std::decay_t<Vjp>>>(name, input_edges(inputs), std::forward<Vjp>(vjp));
  link_outputs(*node, outputs);  // first, so that a saved output knows its output number
  std::vector<SavedTensor>& kept = node->saved();
  kept.reserve(saved.size());
  for (const graph::Save& s : saved) kept.push_back(s.tensor ? SavedTensor(*s.tensor, s.is_output) : SavedTensor());
  return kept;
}

}  // namespace ug::autograd
