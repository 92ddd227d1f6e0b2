#include "ug/compiler/remat.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <variant>
#include <vector>

#include "ug/onnx/graph.h"

namespace ug::compiler {

namespace {

/** One pass over their inputs, row by row or elementwise, and deterministic: cheaper computed
 *  again than held. */
bool cheap(const onnx::Node& n) {
  // clang-format off
  static constexpr std::string_view kOps[] = {
      "Gelu", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Erf", "Sqrt", "Elu", "Selu",
      "Softplus", "LeakyRelu", "HardSigmoid", "HardSwish", "Sin", "Cos", "LayerNormalization", "Softmax"};
  // clang-format on
  return std::ranges::find(kOps, n.op_type) != std::end(kOps) && !n.inputs.empty() && n.inputs[0] >= 0 &&
         n.outputs.size() == 1 && n.outputs[0] >= 0 && n.implicit_inputs.empty();
}

/** Nodes between an early and a late reader below which the value is held: read again that
 *  soon, it costs little memory for little time, and a second pass over it costs time. */
constexpr size_t kMinGap = 8;

struct Copy {
  size_t before;                         // the node index it runs before
  size_t node;                           // the node it copies
  int64_t value;                         // its output, a new value
  int64_t input = -1, input_again = -1;  // an input it reads from the copy before it instead
};

}  // namespace

size_t rematerialize(onnx::Graph& g) {
  constexpr size_t kAlways = std::numeric_limits<size_t>::max();
  // Readers of each value in order; a value read by a subgraph or returned is left alone, one
  // no node made (an input, a constant) is alive for the whole run.
  std::vector<std::vector<size_t>> readers(g.num_values);
  std::vector<bool> pinned(g.num_values, false);
  std::vector<int64_t> producer(g.num_values, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int64_t id : g.nodes[i].inputs)
      if (id >= 0 && (readers[id].empty() || readers[id].back() != i)) readers[id].push_back(i);
    for (int64_t id : g.nodes[i].implicit_inputs) pinned[id] = true;
    for (int64_t id : g.nodes[i].outputs)
      if (id >= 0) producer[id] = static_cast<int64_t>(i);
  }
  for (int64_t id : g.output_ids) pinned[id] = true;
  // A node with an effect (an optimizer's step) may write the live tensors a copy would read
  // (the parameters): a copy never runs after one that its original ran before.
  std::vector<size_t> next_effect(g.nodes.size() + 1, kAlways);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    auto effect = g.nodes[i].attributes.find("effect");
    const bool is_effect = effect != g.nodes[i].attributes.end() && std::holds_alternative<int64_t>(effect->second) &&
                           std::get<int64_t>(effect->second) != 0;
    next_effect[i] = is_effect ? i : next_effect[i + 1];
  }
  std::vector<bool> copied_value(g.num_values, false);
  auto alive_until = [&](int64_t id) {
    if (producer[id] < 0 || pinned[id]) return kAlways;
    return readers[id].empty() ? size_t{0} : readers[id].back();
  };
  // Until when the node's inputs are alive (0: one of them has a copy for late readers).
  auto inputs_alive_until = [&](const onnx::Node& n) {
    size_t until = kAlways;
    for (int64_t x : n.inputs)
      if (x >= 0) until = std::min(until, copied_value[x] ? size_t{0} : alive_until(x));
    return until;
  };

  std::vector<Copy> copies;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const onnx::Node& n = g.nodes[i];
    // A copy of a copy's reader would have to read the copy: one level only.
    if (!cheap(n) || std::ranges::any_of(n.inputs, [&](int64_t x) { return x >= 0 && copied_value[x]; })) continue;
    const int64_t v = n.outputs[0];
    if (pinned[v] || readers[v].size() < 2) continue;
    size_t until = inputs_alive_until(n);
    // An attention's softmax reads scores that die there: the scores' product is computed
    // again too, from its operands, when they are alive (q and k, kept for the backward).
    int64_t product = -1;
    const int64_t x = n.inputs[0];
    if (n.op_type == "Softmax" && alive_until(x) < kAlways && readers[x].size() == 1 && producer[x] >= 0 &&
        g.nodes[producer[x]].op_type == "MatMul" && g.nodes[producer[x]].outputs.size() == 1) {
      product = producer[x];
      until = inputs_alive_until(g.nodes[product]);
    }
    until = std::min(until, next_effect[product >= 0 ? static_cast<size_t>(product) : i]);
    const std::vector<size_t>& r = readers[v];
    size_t best = 0, gap = 0;
    for (size_t k = 1; k < r.size(); ++k)
      if (r[k] - r[k - 1] > gap && until >= r[k]) best = k, gap = r[k] - r[k - 1];
    if (gap < kMinGap) continue;
    auto new_value = [&](int64_t of) {
      g.value_names.push_back(g.value_names[of] + "_again");
      copied_value.push_back(true);
      copied_value[of] = true;
      return static_cast<int64_t>(g.num_values++);
    };
    Copy copy{r[best], i, new_value(v)};
    if (product >= 0) {
      const int64_t scores = new_value(x);
      copies.push_back({r[best], static_cast<size_t>(product), scores});
      copy.input = x, copy.input_again = scores;
    }
    copies.push_back(copy);
    for (size_t k = best; k < r.size(); ++k)
      for (int64_t& id : g.nodes[r[k]].inputs)
        if (id == v) id = copy.value;
  }
  if (copies.empty()) return 0;

  std::ranges::stable_sort(copies, {}, &Copy::before);
  std::vector<std::pair<size_t, onnx::Node>> made_again;  // (index it runs before, the copy)
  for (const Copy& c : copies) {
    onnx::Node copy = g.nodes[c.node];
    copy.outputs = {c.value};
    std::ranges::replace(copy.inputs, c.input, c.input_again);
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
