#include "ug/compiler/remat.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <variant>
#include <vector>

#include "ug/onnx/graph.h"

namespace ug::compiler {

namespace {

bool one_of(const onnx::Node& n, std::initializer_list<std::string_view> ops) {
  return std::ranges::find(ops, n.op_type) != ops.end();
}

/** One pass over their inputs, row by row or elementwise, and deterministic: cheaper computed
 *  again than held. */
bool cheap(const onnx::Node& n) {
  // clang-format off
  return one_of(n, {"Gelu", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Erf", "Sqrt", "Elu", "Selu",
                    "Softplus", "LeakyRelu", "HardSigmoid", "HardSwish", "Sin", "Cos", "LayerNormalization",
                    "Softmax"}) &&
         !n.inputs.empty() && n.inputs[0] >= 0 && n.outputs.size() == 1 && n.outputs[0] >= 0 &&
         n.implicit_inputs.empty();
  // clang-format on
}

/** Ops that rearrange or select their first input (other inputs: sizes and axes). */
bool rearranges(const onnx::Node& n) {
  return one_of(n, {"Transpose", "Reshape", "Split", "Squeeze", "Unsqueeze", "Flatten", "Identity"}) &&
         n.implicit_inputs.empty();
}

/** Nodes between an early and a late reader below which the value is held: read again that
 *  soon, it costs little memory for little time, and a second pass over it costs time; a
 *  product costs more than a pass, so a projection is held across longer gaps (the q/k/v
 *  projection of a transformer block is read again 55-70 nodes later, in the backward). */
constexpr size_t kMinGap = 8;
constexpr size_t kMinProjectionGap = 32;
constexpr size_t kNever = std::numeric_limits<size_t>::max();

struct Copy {
  size_t before;                 // the node index it runs before
  size_t node;                   // the node it copies
  std::vector<int64_t> inputs;   // what the copy reads
  std::vector<int64_t> outputs;  // new values (-1 where the node's output is unused)
};

/** Where each value is read and whether a copy of it is available, while copies are planned. */
class Planner {
 public:
  explicit Planner(onnx::Graph& g)
      : g_(g),
        original_(g.num_values),
        readers_(g.num_values),
        pinned_(g.num_values, false),
        producer_(g.num_values, -1),
        copy_at_(g.num_values, kNever),
        copy_of_(g.num_values, -1),
        next_effect_(g.nodes.size() + 1, kNever) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (int64_t id : g.nodes[i].inputs)
        if (id >= 0 && (readers_[id].empty() || readers_[id].back() != i)) readers_[id].push_back(i);
      for (int64_t id : g.nodes[i].implicit_inputs) pinned_[id] = true;
      for (int64_t id : g.nodes[i].outputs)
        if (id >= 0) producer_[id] = static_cast<int64_t>(i);
    }
    // A value read by a subgraph or returned is left alone, one no node made (an input, a
    // constant) is alive for the whole run.
    for (int64_t id : g.output_ids) pinned_[id] = true;
    // A node with an effect (an optimizer's step) may write the live tensors a copy would read
    // (the parameters): a copy never runs after one that its original ran before.
    for (size_t i = g.nodes.size(); i-- > 0;) {
      auto effect = g.nodes[i].attributes.find("effect");
      const bool is_effect = effect != g.nodes[i].attributes.end() && std::holds_alternative<int64_t>(effect->second) &&
                             std::get<int64_t>(effect->second) != 0;
      next_effect_[i] = is_effect ? i : next_effect_[i + 1];
    }
  }

  /** A value of the graph as traced, not a copy. */
  bool traced(int64_t id) const { return id >= 0 && static_cast<size_t>(id) < original_; }
  /** Alive for the whole run: an input, a constant, state; or a returned value. */
  bool always(int64_t id) const { return traced(id) && (producer_[id] < 0 || pinned_[id]); }
  int64_t producer(int64_t id) const { return producer_[id]; }
  const std::vector<size_t>& readers(int64_t id) const { return readers_[id]; }

  /** The value a copy placed before node `pos` reads for `id`: the value itself while it is
   *  alive there, else a copy made at or before `pos`; -1 when neither. */
  int64_t at(int64_t id, size_t pos) const {
    if (id >= 0 && !traced(id)) return made_at_[static_cast<size_t>(id) - original_] <= pos ? id : -1;
    if (id < 0 || always(id) || (!readers_[id].empty() && readers_[id].back() >= pos)) return id;
    return copy_at_[id] <= pos ? copy_of_[id] : -1;
  }

  /** Whether copies placed before `pos` of nodes that ran first at `first` run on the same inputs. */
  bool no_effect_between(size_t first, size_t pos) const { return next_effect_[first] >= pos; }

  /** The best split of v's readers: the index k of the first late reader after the longest gap
   *  ≥ min_gap for which `feasible(r[k])`, or 0 when there is none. */
  template <class Feasible> size_t late_readers(int64_t v, size_t min_gap, Feasible feasible) const {
    const std::vector<size_t>& r = readers_[v];
    size_t best = 0, gap = 0;
    for (size_t k = 1; k < r.size(); ++k)
      if (r[k] - r[k - 1] > gap && feasible(r[k])) best = k, gap = r[k] - r[k - 1];
    return gap >= min_gap ? best : 0;
  }

  /** Copies node `node` before `pos`, reading `inputs`; its outputs' copies are available from
   *  `pos` on. Returns the copy's outputs. */
  const std::vector<int64_t>& copy(size_t node, size_t pos, std::vector<int64_t> inputs) {
    std::vector<int64_t> outputs;
    for (int64_t id : g_.nodes[node].outputs) {
      if (id < 0) {
        outputs.push_back(-1);
        continue;
      }
      g_.value_names.push_back(g_.value_names[id] + "_again");
      const auto made = static_cast<int64_t>(g_.num_values++);
      made_at_.push_back(pos);
      if (copy_of_[id] < 0 || copy_at_[id] > pos) copy_of_[id] = made, copy_at_[id] = pos;
      outputs.push_back(made);
    }
    copies_.push_back({pos, node, std::move(inputs), std::move(outputs)});
    return copies_.back().outputs;
  }

  /** v's readers from the k-th on read `again` instead. */
  void redirect(int64_t v, size_t k, int64_t again) {
    for (size_t i = k; i < readers_[v].size(); ++i)
      for (int64_t& id : g_.nodes[readers_[v][i]].inputs)
        if (id == v) id = again;
    readers_[v].resize(k);
  }

  /** Inserts the copies before their nodes and plans liveness again. Returns how many. */
  size_t apply() {
    if (copies_.empty()) return 0;
    std::ranges::stable_sort(copies_, {}, &Copy::before);
    std::vector<onnx::Node> made;  // built before the originals move
    for (Copy& c : copies_) {
      onnx::Node copy = g_.nodes[c.node];
      copy.inputs = std::move(c.inputs);
      copy.outputs = std::move(c.outputs);
      copy.name += "_again";
      made.push_back(std::move(copy));
    }
    std::vector<onnx::Node> nodes;
    nodes.reserve(g_.nodes.size() + copies_.size());
    size_t next = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (; next < copies_.size() && copies_[next].before == i; ++next) nodes.push_back(std::move(made[next]));
      nodes.push_back(std::move(g_.nodes[i]));
    }
    const size_t n = copies_.size();
    g_.nodes = std::move(nodes);
    onnx::plan_liveness(g_);
    return n;
  }

 private:
  onnx::Graph& g_;
  size_t original_;                           // values before any copy
  std::vector<size_t> made_at_;               // each copy's value: the node it runs before
  std::vector<std::vector<size_t>> readers_;  // of each original value, in order
  std::vector<bool> pinned_;
  std::vector<int64_t> producer_;
  std::vector<size_t> copy_at_;   // from which node on a copy of the value exists
  std::vector<int64_t> copy_of_;  // that copy
  std::vector<size_t> next_effect_;
  std::vector<Copy> copies_;
};

/** Projections (the q/k/v projection of a block's input by its weights), and the views, bias
 *  additions and scalings of them that the backward reads: one product computed again frees all
 *  of them between the forward's use and the backward's, since what the product reads is alive
 *  there anyway (the input, held for the weight's gradient). All values of one product get
 *  their copies before the first late reader among them, so they share one product. */
void recompute_projections(Planner& plan, const onnx::Graph& g) {
  // For each value: the product it derives from, -2 for one alive for the whole run or a view
  // of such values (a weight's transpose), -1 otherwise (a product may read those if they are
  // alive where its copies go).
  constexpr int64_t kWhole = -2, kNone = -1;
  std::vector<int64_t> root(g.num_values, kNone), node_root(g.nodes.size(), kNone);
  auto root_of = [&](int64_t id) { return id < 0 ? kWhole : plan.always(id) ? kWhole : root[id]; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const onnx::Node& n = g.nodes[i];
    int64_t r = kNone;
    if (n.op_type == "MatMul" && n.inputs.size() == 2 && root_of(n.inputs[0]) < 0 && root_of(n.inputs[1]) < 0) {
      r = static_cast<int64_t>(i);  // one product per chain: its operands no projection's
    } else if (rearranges(n) || one_of(n, {"Add", "Sub", "Mul", "Div"})) {
      // Its first input a projection or a whole-run value, the others whole-run values (a
      // bias, a scale, sizes); Add and Mul either way round.
      const bool commutes = one_of(n, {"Add", "Mul"}) && n.inputs.size() == 2;
      for (size_t first = 0; first < (commutes ? 2u : 1u) && r == kNone; ++first) {
        r = root_of(n.inputs[first]);
        for (size_t k = 0; k < n.inputs.size(); ++k)
          if (k != first && root_of(n.inputs[k]) != kWhole) r = kNone;
      }
    }
    node_root[i] = r;
    for (int64_t id : n.outputs)
      if (id >= 0) root[id] = r;
  }
  // The late readers of each projection's values, and where its copies go: before the first.
  std::vector<std::pair<int64_t, size_t>> late;  // (value, index of its first late reader)
  std::vector<size_t> place(g.nodes.size(), kNever);
  for (size_t id = 0; id < root.size(); ++id) {
    const auto v = static_cast<int64_t>(id);
    // An activation's input is left held: the activation's own copy reads it (see below).
    if (root[id] < 0 || plan.always(v) ||
        std::ranges::any_of(plan.readers(v), [&](size_t j) { return cheap(g.nodes[j]); }))
      continue;
    const size_t first = static_cast<size_t>(root[id]);
    const size_t k =
        plan.late_readers(v, kMinProjectionGap, [&](size_t pos) { return plan.no_effect_between(first, pos); });
    if (k == 0) continue;
    late.emplace_back(v, k);
    place[first] = std::min(place[first], plan.readers(v)[k]);
  }
  // The product reads its operands there: values of the program (a block's input inside a
  // stack) must be alive there anyway (held for the weight's gradient), or the group is held.
  std::erase_if(late, [&](const std::pair<int64_t, size_t>& entry) {
    const onnx::Node& product = g.nodes[static_cast<size_t>(root[entry.first])];
    const size_t pos = place[static_cast<size_t>(root[entry.first])];
    return std::ranges::any_of(product.inputs, [&](int64_t x) { return root_of(x) == kNone && plan.at(x, pos) != x; });
  });
  // Copies of the nodes the late values need, in the program's order (a value's producer
  // comes before its readers), each reading the copies made before it.
  std::vector<bool> needed(g.nodes.size(), false);
  std::vector<int64_t> stack;
  for (const auto& [v, k] : late) stack.push_back(v);
  while (!stack.empty()) {
    const int64_t v = stack.back();
    stack.pop_back();
    if (v < 0 || plan.always(v) || root[v] == kNone || needed[static_cast<size_t>(plan.producer(v))]) continue;
    const auto p = static_cast<size_t>(plan.producer(v));
    needed[p] = true;
    for (int64_t x : g.nodes[p].inputs) stack.push_back(x);
  }
  // Each copy goes where its projection's copies go; a whole-run value's view (a weight's
  // transpose) where the first copy that reads it goes.
  std::vector<size_t> at(g.nodes.size(), kNever);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!needed[i]) continue;
    const int64_t r = node_root[i];
    if (r >= 0) at[i] = place[r];
    for (int64_t id : g.nodes[i].outputs)
      if (id >= 0 && r < 0)
        for (size_t j : plan.readers(id))
          if (needed[j]) at[i] = std::min(at[i], at[j]);
  }
  std::vector<int64_t> again(g.num_values, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!needed[i]) continue;
    const onnx::Node& n = g.nodes[i];
    std::vector<int64_t> inputs = n.inputs;
    for (int64_t& x : inputs)
      if (x >= 0 && again[x] >= 0) x = again[x];
    const std::vector<int64_t>& made = plan.copy(i, at[i], inputs);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) again[n.outputs[o]] = made[o];
  }
  for (const auto& [v, k] : late) plan.redirect(v, k, again[v]);
}

}  // namespace

size_t rematerialize(onnx::Graph& g) {
  if (const char* env = std::getenv("UG_JIT_REMAT"); env && std::strcmp(env, "0") == 0) return 0;
  Planner plan(g);
  recompute_projections(plan, g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const onnx::Node& n = g.nodes[i];
    if (!cheap(n)) continue;
    const int64_t v = n.outputs[0];
    if (plan.always(v) || plan.readers(v).size() < 2) continue;
    // An attention's softmax reads scores that die there: the scores' product is computed
    // again too, from its operands, when they are available (q and k, kept for the backward,
    // or computed again themselves).
    int64_t product = -1;
    const int64_t x = n.inputs[0];
    const int64_t p = plan.traced(x) ? plan.producer(x) : -1;  // a copy's input: one made here
    if (n.op_type == "Softmax" && p >= 0 && !plan.always(x) && plan.readers(x).size() == 1 &&
        g.nodes[p].op_type == "MatMul" && g.nodes[p].outputs.size() == 1)
      product = p;
    const onnx::Node& source = product >= 0 ? g.nodes[product] : n;
    auto available = [&](size_t pos) {
      return std::ranges::all_of(source.inputs, [&](int64_t in) { return plan.at(in, pos) >= 0 || in < 0; });
    };
    const size_t first = product >= 0 ? static_cast<size_t>(product) : i;
    const size_t k =
        plan.late_readers(v, kMinGap, [&](size_t pos) { return available(pos) && plan.no_effect_between(first, pos); });
    if (k == 0) continue;
    const size_t pos = plan.readers(v)[k];
    auto inputs_at = [&](const onnx::Node& node) {
      std::vector<int64_t> in = node.inputs;
      for (int64_t& id : in) id = plan.at(id, pos);
      return in;
    };
    std::vector<int64_t> inputs = inputs_at(n);
    if (product >= 0) inputs[0] = plan.copy(static_cast<size_t>(product), pos, inputs_at(g.nodes[product]))[0];
    plan.redirect(v, k, plan.copy(i, pos, inputs)[0]);
  }
  return plan.apply();
}

}  // namespace ug::compiler
