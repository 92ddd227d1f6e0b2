#include "ug/compiler/remat.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <vector>

#include "ug/onnx/graph.h"

namespace ug::compiler {

namespace {

/** One pass over their inputs, row by row or elementwise, and deterministic: cheaper computed
 *  again than held. */
bool cheap(const onnx::Node& n) {
  static constexpr std::string_view kOps[] = {"Gelu",
                                              "Relu",
                                              "Sigmoid",
                                              "Tanh",
                                              "Exp",
                                              "Log",
                                              "Neg",
                                              "Abs",
                                              "Erf",
                                              "Sqrt",
                                              "Elu",
                                              "Selu",
                                              "Softplus",
                                              "LeakyRelu",
                                              "HardSigmoid",
                                              "HardSwish",
                                              "Sin",
                                              "Cos",
                                              "LayerNormalization"};
  return std::ranges::find(kOps, n.op_type) != std::end(kOps) && !n.inputs.empty() && n.inputs[0] >= 0 &&
         n.outputs.size() == 1 && n.outputs[0] >= 0 && n.implicit_inputs.empty();
}

/** Nodes between an early and a late reader below which the value is held: read again that
 *  soon, it costs little memory for little time, and a second pass over it costs time. */
constexpr size_t kMinGap = 8;

struct Copy {
  size_t before;  // the node index it runs before
  size_t node;    // the node it copies
  int64_t value;  // its output, a new value
};

}  // namespace

size_t rematerialize(onnx::Graph& g) {
  constexpr size_t kAlways = std::numeric_limits<size_t>::max();
  // Readers of each value in order; a value read by a subgraph or returned is left alone, one
  // no node made (an input, a constant) is alive for the whole run.
  std::vector<std::vector<size_t>> readers(g.num_values);
  std::vector<bool> pinned(g.num_values, false), made(g.num_values, false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int64_t id : g.nodes[i].inputs)
      if (id >= 0 && (readers[id].empty() || readers[id].back() != i)) readers[id].push_back(i);
    for (int64_t id : g.nodes[i].implicit_inputs) pinned[id] = true;
    for (int64_t id : g.nodes[i].outputs)
      if (id >= 0) made[id] = true;
  }
  for (int64_t id : g.output_ids) pinned[id] = true;
  auto alive_until = [&](int64_t id) {
    if (!made[id] || pinned[id]) return kAlways;
    return readers[id].empty() ? size_t{0} : readers[id].back();
  };

  std::vector<Copy> copies;
  std::vector<bool> copied_value(g.num_values, false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const onnx::Node& n = g.nodes[i];
    if (!cheap(n)) continue;
    const int64_t v = n.outputs[0];
    // A copy of a copy's reader would have to read the copy: one level only.
    bool copyable = !pinned[v] && readers[v].size() >= 2;
    size_t inputs_alive_until = kAlways;
    for (int64_t x : n.inputs)
      if (x >= 0) {
        copyable = copyable && !copied_value[x];
        inputs_alive_until = std::min(inputs_alive_until, alive_until(x));
      }
    if (!copyable) continue;
    const std::vector<size_t>& r = readers[v];
    size_t best = 0, gap = 0;
    for (size_t k = 1; k < r.size(); ++k)
      if (r[k] - r[k - 1] > gap && inputs_alive_until >= r[k]) best = k, gap = r[k] - r[k - 1];
    if (gap < kMinGap) continue;
    const auto again = static_cast<int64_t>(g.num_values++);
    g.value_names.push_back(g.value_names[v] + "_again");
    copies.push_back({r[best], i, again});
    copied_value[v] = true;
    for (size_t k = best; k < r.size(); ++k)
      for (int64_t& id : g.nodes[r[k]].inputs)
        if (id == v) id = again;
  }
  if (copies.empty()) return 0;

  std::ranges::stable_sort(copies, {}, &Copy::before);
  std::vector<std::pair<size_t, onnx::Node>> made_again;  // (index it runs before, the copy)
  for (const Copy& c : copies) {
    onnx::Node copy = g.nodes[c.node];
    copy.outputs = {c.value};
    copy.name += "_again";
    made_again.emplace_back(c.before, std::move(copy));
  }
  std::vector<onnx::Node> nodes;
  nodes.reserve(g.nodes.size() + copies.size());
  auto next = made_again.begin();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (; next != made_again.end() && next->first == i; ++next) nodes.push_back(std::move(next->second));
    nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
  onnx::plan_liveness(g);
  return copies.size();
}

}  // namespace ug::compiler
