// Recording: the node an op call leaves for backward, and the bookkeeping of in-place ops.
#include "ug/graph/record.h"

#include "ug/backend/backend.h"
#include "ug/graph/debugging.h"
#include "ug/graph/forward.h"

namespace ug::autograd {

std::vector<Edge> input_edges(std::span<const Tensor* const> inputs) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs) edges.push_back(t && t->defined() ? gradient_edge(*t) : Edge{});
  return edges;
}

void link_outputs(Node& node, std::span<const Tensor* const> outputs) {
  if (AnomalyMode::is_enabled()) node.forward_trace() = debugging::current_trace();
  node.outputs().reserve(outputs.size());
  uint32_t nr = 0;
  for (const Tensor* out : outputs) {
    node.outputs().push_back({out->shape(), out->dtype(), out->device()});
    if (is_inexact(out->dtype())) {
      AutogradMeta& m = meta(*out);
      m.grad_fn = Ref<Node>(&node);
      m.output_nr = nr;
    }
    ++nr;
  }
}

bool inplace_needs_rebase(const Tensor& t, const Tensor* other, const char* op) {
  // Tangents (forward mode) must follow an in-place change whatever the grad mode.
  if (forward::has_tangent(t) || (other && forward::has_tangent(*other))) {
    if (t.impl().is_view())
      fail<RuntimeError>("[", op,
                         "] in-place change of a view of a tensor with a forward-mode tangent is not "
                         "supported; use out-of-place ops");
    return true;
  }
  if (!GradMode::is_enabled()) return false;
  AutogradMeta* m = meta_if(t);
  const bool t_grad = m && (m->requires_grad || m->grad_fn);
  if (t_grad && !m->grad_fn)
    fail<RuntimeError>("[", op,
                       "] a leaf tensor that requires grad is being used in an in-place operation; "
                       "wrap it in no_grad() or use the out-of-place form");
  const bool needed = t_grad || (other && other->defined() && requires_grad(*other));
  if (needed && t.impl().is_view())
    fail<RuntimeError>("[", op,
                       "] in-place change of a view while recording gradients is not supported: the "
                       "base tensor's history would miss it; use out-of-place ops (cat, where, index ops)");
  return needed;
}

void rebase_history(const Tensor& t, const Tensor& result) {
  {
    NoGradGuard no_grad;
    backend_for(t.device()).copy(result, t);
  }
  t.bump_version();
  AutogradMeta* rm = meta_if(result);
  AutogradMeta& m = meta(t);
  m.grad_fn = rm ? rm->grad_fn : Ref<Node>();
  m.output_nr = rm ? rm->output_nr : 0;
  forward::copy_tangents(result, t);
}

}  // namespace ug::autograd
