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

}  // namespace ug::autograd
