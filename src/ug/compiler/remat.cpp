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
                    "Softmax", "Cast"}) &&
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

/** What the plan weighs each value by: its bytes, and for a rearrangement's result whether the
 *  traced run made it a copy in a buffer of its own (a reshape of a transposed view), not a
 *  view of its input's buffer. */
struct Sizes {
  std::vector<int64_t> bytes;
  std::vector<bool> copied;
};

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
      origin_.push_back(id);
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

  /** The sizes of each value, copies included: a copy's are its original's. */
  Sizes sizes(Sizes original) const {
    for (int64_t id : origin_) {
      original.bytes.push_back(original.bytes[static_cast<size_t>(id)]);
      original.copied.push_back(original.copied[static_cast<size_t>(id)]);
    }
    return original;
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
    onnx::plan_run(g_);
    return n;
  }

 private:
  onnx::Graph& g_;
  size_t original_;                           // values before any copy
  std::vector<size_t> made_at_;               // each copy's value: the node it runs before
  std::vector<int64_t> origin_;               // each copy's value: the value it computes again
  std::vector<std::vector<size_t>> readers_;  // of each original value, in order
  std::vector<bool> pinned_;
  std::vector<int64_t> producer_;
  std::vector<size_t> copy_at_;   // from which node on a copy of the value exists
  std::vector<int64_t> copy_of_;  // that copy
  std::vector<size_t> next_effect_;
  std::vector<Copy> copies_;
};

/** Which candidates a plan may copy, and which it copied. A candidate is named by a value: a
 *  cheap node's output, or a projection's product (standing for all the values computed again
 *  from it). */
struct Units {
  struct Copied {
    int64_t unit;
    bool product;                // whether its copies include a product
    std::vector<int64_t> freed;  // the values its copies stand for after the first readers
  };
  const std::vector<bool>* allowed = nullptr;  // by value id; null: every candidate
  std::vector<Copied> copied;
  bool admits(int64_t v) const { return !allowed || (*allowed)[static_cast<size_t>(v)]; }
};

/** Projections (the q/k/v projection of a block's input by its weights), and the views, bias
 *  additions and scalings of them that the backward reads: one product computed again frees all
 *  of them between the forward's use and the backward's, since what the product reads is alive
 *  there anyway (the input, held for the weight's gradient). All values of one product get
 *  their copies before the first late reader among them, so they share one product. */
void recompute_projections(Planner& plan, const onnx::Graph& g, Units& units) {
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
    } else if (rearranges(n) || one_of(n, {"Add", "Sub", "Mul", "Div", "Cast"})) {
      // Its first input a projection or a whole-run value, the others whole-run values (a
      // bias, a scale, sizes); Add and Mul either way round. A cast (autocast's low-precision
      // copy of a weight, bias or result) is one pass, made again with the product.
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
    if (!units.admits(g.nodes[first].outputs[0])) continue;
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
  for (const auto& [v, k] : late) {
    const int64_t unit = g.nodes[static_cast<size_t>(root[v])].outputs[0];
    auto known = std::ranges::find(units.copied, unit, &Units::Copied::unit);
    if (known == units.copied.end()) units.copied.push_back({unit, true, {v}});
    else known->freed.push_back(v);
  }
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

/** The copies of the candidates `units` admits, made in g; records those it copied there. Returns
 *  how many nodes it copied and the bytes of each value, the copies' included. */
std::pair<size_t, Sizes> plan_copies(onnx::Graph& g, const Sizes& sizes, Units& units) {
  Planner plan(g);
  recompute_projections(plan, g, units);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const onnx::Node& n = g.nodes[i];
    // A rearrangement the run made a copy of (an attention's heads merged back) is one pass too.
    if (!cheap(n) && !(rearranges(n) && n.outputs.size() == 1 && n.outputs[0] >= 0 && sizes.copied[n.outputs[0]]))
      continue;
    const int64_t v = n.outputs[0];
    if (plan.always(v) || plan.readers(v).size() < 2 || !units.admits(v)) continue;
    // Where the node's first input is not available, the node making it is copied too, from
    // its own inputs: an attention's softmax reads scores that die there (their product is
    // computed again from q and k, kept for the backward or computed again themselves); an
    // autocast's cast reads a layer norm's output that died in the forward (the norm computed
    // again from its input, kept for its backward); a reshape copies a transposed view of a
    // value kept for the backward (an attention's output, its heads merged).
    int64_t feeder = -1;
    const int64_t x = n.inputs[0];
    const int64_t p = plan.traced(x) ? plan.producer(x) : -1;  // a copy's input: one made here
    if (p >= 0 && !plan.always(x) && g.nodes[p].outputs.size() == 1 && g.nodes[p].implicit_inputs.empty()) {
      const onnx::Node& made = g.nodes[p];
      if (n.op_type == "Softmax" ? made.op_type == "MatMul" && plan.readers(x).size() == 1
                                 : cheap(made) || made.op_type == "Transpose")
        feeder = p;
    }
    auto available = [&](const onnx::Node& node, size_t pos, size_t from) {
      return std::all_of(node.inputs.begin() + static_cast<std::ptrdiff_t>(from), node.inputs.end(),
                         [&](int64_t in) { return in < 0 || plan.at(in, pos) >= 0; });
    };
    auto direct = [&](size_t pos) { return available(n, pos, 0); };
    auto fed = [&](size_t pos) { return feeder >= 0 && available(g.nodes[feeder], pos, 0) && available(n, pos, 1); };
    const size_t k = plan.late_readers(v, kMinGap, [&](size_t pos) {
      const bool d = direct(pos);
      return (d || fed(pos)) && plan.no_effect_between(d ? i : static_cast<size_t>(feeder), pos);
    });
    if (k == 0) continue;
    const size_t pos = plan.readers(v)[k];
    auto inputs_at = [&](const onnx::Node& node) {
      std::vector<int64_t> in = node.inputs;
      for (int64_t& id : in) id = plan.at(id, pos);
      return in;
    };
    const bool via_feeder = !direct(pos);
    std::vector<int64_t> inputs = inputs_at(n);
    if (via_feeder) inputs[0] = plan.copy(static_cast<size_t>(feeder), pos, inputs_at(g.nodes[feeder]))[0];
    plan.redirect(v, k, plan.copy(i, pos, inputs)[0]);
    units.copied.push_back({v, via_feeder && g.nodes[feeder].op_type == "MatMul", {v}});
  }
  Sizes all = plan.sizes(sizes);
  return {plan.apply(), std::move(all)};
}

/** Where a program holds the most bytes: the most, the first node at which it does, at how many
 *  nodes, and for each value the span of nodes its buffer is alive. */
struct Peak {
  int64_t bytes = 0;
  size_t at = 0, count = 0;
  std::vector<size_t> from, to;  // by value id; from > to for a value alive for the whole run
  /** Lower than `other`, or as low at fewer nodes. */
  bool below(const Peak& other) const { return bytes < other.bytes || (bytes == other.bytes && count < other.count); }
  /** Whether v's buffer is held across the peak: made before it, read after it. */
  bool across(int64_t v) const { return from[static_cast<size_t>(v)] < at && to[static_cast<size_t>(v)] > at; }
};

/** The bytes alive at each node of g, as run_graph holds them: the buffers made before it and
 *  read at or after it (inputs, constants and state, alive throughout, left out); a view is its
 *  base's buffer, and so is an elementwise result written into its dying operand. */
Peak peak_of(const onnx::Graph& g, const Sizes& sizes) {
  const std::vector<int64_t>& bytes = sizes.bytes;
  const size_t n = g.nodes.size();
  std::vector<int64_t> base(g.num_values);
  for (size_t id = 0; id < g.num_values; ++id) base[id] = static_cast<int64_t>(id);
  auto find = [&](int64_t id) {
    while (base[id] != id) id = base[id];
    return id;
  };
  Peak p{.from = std::vector<size_t>(g.num_values, n), .to = std::vector<size_t>(g.num_values, 0)};
  auto spans = [&] {  // from and to of each buffer, its views' reads included
    std::ranges::fill(p.from, n);
    std::ranges::fill(p.to, 0);
    for (size_t i = 0; i < n; ++i) {
      for (int64_t id : g.nodes[i].outputs)
        if (id >= 0 && find(id) == id) p.from[id] = p.to[id] = i;
      auto read = [&](int64_t id) {
        if (id >= 0 && p.from[find(id)] < n) p.to[find(id)] = std::max(p.to[find(id)], i);
      };
      std::ranges::for_each(g.nodes[i].inputs, read);
      std::ranges::for_each(g.nodes[i].implicit_inputs, read);
    }
    for (int64_t id : g.output_ids)
      if (p.from[find(id)] < n) p.to[find(id)] = n;
  };
  // A reshape keeps its base's layout, so an elementwise result may take a dying base through
  // it (a gradient's product reshaped for an activation's gradient); a transpose or split does
  // not. A rearrangement the run made a copy of is a buffer of its own.
  std::vector<bool> reshaped(g.num_values, false);
  for (const onnx::Node& node : g.nodes)
    if (rearranges(node) && !node.inputs.empty() && node.inputs[0] >= 0) {
      const int64_t in = node.inputs[0];
      const bool reshape = one_of(node, {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"});
      for (int64_t id : node.outputs)
        if (id >= 0 && !sizes.copied[id])
          base[id] = find(in), reshaped[id] = reshape && (base[in] == in || reshaped[in]);
    }
  auto whole_view = [&](int64_t id) { return base[id] == id || reshaped[id]; };
  spans();
  for (size_t i = 0; i < n; ++i) {
    const onnx::Node& node = g.nodes[i];
    const int operands = onnx::in_place_operands(node);
    for (int k = 0; k < operands && node.outputs[0] >= 0; ++k) {
      const int64_t in = node.inputs[static_cast<size_t>(k)];
      if (in < 0 || !whole_view(in)) continue;
      const int64_t b = find(in);
      if (p.from[b] >= n || p.to[b] != i || bytes[b] != bytes[node.outputs[0]]) continue;
      base[node.outputs[0]] = b;
      p.to[b] = std::max(p.to[b], p.to[node.outputs[0]]);
      break;
    }
  }
  spans();
  std::vector<int64_t> change(n + 2, 0);
  for (size_t id = 0; id < g.num_values; ++id)
    if (find(static_cast<int64_t>(id)) == static_cast<int64_t>(id) && p.from[id] < n) {
      change[p.from[id]] += bytes[id];
      change[p.to[id] + 1] -= bytes[id];
    }
  int64_t live = 0;
  for (size_t i = 0; i < n; ++i) {
    live += change[i];
    if (live > p.bytes) p.bytes = live, p.at = i, p.count = 0;
    p.count += live == p.bytes;
  }
  for (size_t id = 0; id < g.num_values; ++id) {
    const auto b = static_cast<size_t>(find(static_cast<int64_t>(id)));
    p.from[id] = p.from[b], p.to[id] = p.to[b];
  }
  return p;
}

}  // namespace

size_t rematerialize(onnx::Graph& g, std::vector<int64_t> bytes, const std::vector<const void*>& buffers) {
  if (const char* env = std::getenv("UG_JIT_REMAT"); env && std::strcmp(env, "0") == 0) return 0;
  // A value the trace did not bind (an intermediate of one op's nodes: a linear's product before
  // its bias) weighs what an elementwise reader of it makes (broadcasting makes no less), else
  // its node's largest input.
  std::vector<int64_t> made_by_reader(bytes.size(), -1);
  for (const onnx::Node& node : g.nodes)
    if (one_of(node, {"Add", "Sub", "Mul", "Div"}) && node.outputs.size() == 1 && node.outputs[0] >= 0 &&
        bytes[node.outputs[0]] >= 0)
      for (int64_t in : node.inputs)
        if (in >= 0 && bytes[in] < 0) made_by_reader[in] = bytes[node.outputs[0]];
  for (const onnx::Node& node : g.nodes)
    for (int64_t id : node.outputs)
      if (id >= 0 && bytes[id] < 0) {
        bytes[id] = made_by_reader[id];
        for (int64_t in : node.inputs)
          if (in >= 0 && made_by_reader[id] < 0) bytes[id] = std::max(bytes[id], bytes[in]);
      }
  for (int64_t& b : bytes) b = std::max<int64_t>(b, 0);
  Sizes sizes{std::move(bytes), std::vector<bool>(g.num_values, false)};
  for (const onnx::Node& node : g.nodes)
    if (rearranges(node) && !node.inputs.empty() && node.inputs[0] >= 0)
      for (int64_t id : node.outputs)
        if (id >= 0 && buffers[id] && buffers[node.inputs[0]] && buffers[id] != buffers[node.inputs[0]])
          sizes.copied[id] = true;
  Units every;
  {
    onnx::Graph all = g;
    plan_copies(all, sizes, every);
  }
  // As XLA's rematerialization: a candidate whose buffer is held across the program's peak is
  // computed again when that lowers the peak, then one held across the peak that leaves, until
  // none does. Those needing no product first, the largest first.
  auto weight = [&](const Units::Copied& c) {
    return std::ranges::max(c.freed, {}, [&](int64_t v) { return sizes.bytes[static_cast<size_t>(v)]; });
  };
  std::ranges::stable_sort(every.copied, [&](const Units::Copied& a, const Units::Copied& b) {
    return a.product != b.product ? !a.product : sizes.bytes[weight(a)] > sizes.bytes[weight(b)];
  });
  std::vector<bool> allowed(g.num_values, false), tried(g.num_values, false);
  onnx::Graph best = g;
  size_t copies = 0;
  Peak peak = peak_of(best, sizes);
  for (;;) {
    auto next = std::ranges::find_if(every.copied, [&](const Units::Copied& c) {
      return !tried[c.unit] && std::ranges::any_of(c.freed, [&](int64_t v) { return peak.across(v); });
    });
    if (next == every.copied.end()) break;
    tried[next->unit] = allowed[next->unit] = true;
    onnx::Graph trial = g;
    Units units{.allowed = &allowed};
    auto [made, trial_sizes] = plan_copies(trial, sizes, units);
    Peak lower = peak_of(trial, trial_sizes);
    if (!lower.below(peak)) {
      allowed[next->unit] = false;
      continue;
    }
    best = std::move(trial), copies = made, peak = std::move(lower);
  }
  // A candidate taken early may lower the peak the later ones left by little: its copy, made
  // before its late readers, may itself be alive at that peak. It is dropped when, beside the
  // others kept, it lowers the peak by less than half its buffer: it costs a pass over that
  // buffer for what it saves. One at a time, in the order taken, each judged against the plan
  // the drops before it left (dropping one may make another's copy worth more).
  for (const Units::Copied& c : every.copied) {
    if (!allowed[c.unit]) continue;
    allowed[c.unit] = false;
    onnx::Graph trial = g;
    Units units{.allowed = &allowed};
    auto [made, trial_sizes] = plan_copies(trial, sizes, units);
    Peak without = peak_of(trial, trial_sizes);
    if (without.bytes - peak.bytes >= sizes.bytes[weight(c)] / 2) {
      allowed[c.unit] = true;
      continue;
    }
    best = std::move(trial), copies = made, peak = std::move(without);
  }
  g = std::move(best);
  return copies;
}

}  // namespace ug::compiler
