#include "ug/compiler/fuse.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ug/core/shape.h"
#include "ug/core/thread_pool.h"
#include "ug/graph/capture.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/update_replay.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/onnx/graph.h"
#include "ug/onnx/op_table.h"

namespace ug::compiler {
namespace {

/** Output elements per block: every intermediate of a block (a few of them alive at once) stays
 *  in L2. Measured in docs/design.md ("Fused elementwise chains"); UG_JIT_FUSE_BLOCK, read when
 *  a program is compiled, sets another size (for measuring it), 0 turns the fusion of
 *  chains off (not fold_applied_updates). */
constexpr int64_t kBlockElements = 65536;

int64_t block_elements() {
  const char* env = std::getenv("UG_JIT_FUSE_BLOCK");
  return env && *env ? std::max<int64_t>(0, std::atoll(env)) : kBlockElements;
}
/** A group whose output is under this many blocks runs on whole tensors: the unfused
 *  computation, in place where the unfused nodes would have written in place. Its values fit
 *  in the last-level cache, and per block a graph run, the inputs' slices and a copy of the
 *  result cost more than the misses blocking saves (docs/design.md, "Fused elementwise
 *  chains"). */
constexpr int64_t kWholeBlocks = 8;
/** Elements a block's start is aligned to: a multiple of every SIMD width of the kernels. */
constexpr int64_t kAlign = 64;

/** Ops whose output element i reads only element i of each (broadcast) input: a block of the
 *  output is computed from the same block of the inputs. */
bool is_elementwise(std::string_view op) {
  static const std::unordered_set<std::string_view> ops = {
      "Add",        "Sub",  "Mul",  "Div",        "Pow",      "Max",       "Min",         "Where",
      "Relu",       "Neg",  "Exp",  "Log",        "Tanh",     "Sigmoid",   "Sqrt",        "Abs",
      "Reciprocal", "Sin",  "Cos",  "Erf",        "Softplus", "LeakyRelu", "Elu",         "Selu",
      "Floor",      "Ceil", "Sign", "Equal",      "Less",     "Greater",   "LessOrEqual", "GreaterOrEqual",
      "Not",        "And",  "Or",   "HardSigmoid"};
  return ops.contains(op);
}

/** Reductions whose result over a block's partial results is their result over the whole. */
bool is_reduction(std::string_view op) {
  return op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin";
}

/** A fused group: a graph of its nodes over local values (0 .. num_inputs-1 the fused node's
 *  inputs, then each node's output), run by operator() through run_graph, so that on whole
 *  tensors it is the unfused computation, in-place writes included. */
struct Group {
  onnx::Graph whole;         // the nodes as they are
  onnx::Graph partial;       // a trailing reduction keeping its dims, a mean as a sum (blocks)
  std::vector<bool> sliced;  // by input: data a block takes a slice of
  size_t num_inputs = 0;
  int64_t block = kBlockElements;
  int64_t whole_below = 0;

  const onnx::Node& last() const { return whole.nodes.back(); }
  bool reduces() const { return is_reduction(last().op_type); }

  Tensor run(std::vector<Tensor> values, bool blocks_of_a_reduction = false) const {
    const onnx::Graph& g = blocks_of_a_reduction ? partial : whole;
    values.resize(g.num_values);
    return onnx::run_graph(g, std::move(values)).at(0);
  }

  /** Whether a run must be the unfused computation on whole tensors: autograd records through
   *  it, an input carries a tangent or a batch (the conditions of run_graph's in-place), or
   *  an outer trace captures the ops. */
  static bool unblocked(const std::vector<Tensor>& inputs) {
    // Inside an outer trace the blocks' ops would be recorded one by one into that graph.
    if (graph::detail::current_capture) return true;
    return std::ranges::any_of(inputs, [](const Tensor& t) {
      return t.defined() &&
             ((GradMode::is_enabled() && t.requires_grad()) || forward::has_tangent(t) || t.impl().batch());
    });
  }

  /** An input of the output's shape and dtype that this run holds alone (the enclosing graph
   *  has read it for the last time): the blocks' results go into its rows, each block's after
   *  it read them, and no other block reads those rows. Undefined when there is none. */
  Tensor dying_input(const std::vector<Tensor>& inputs, const Shape& shape, const Tensor& y) const {
    for (size_t i = 0; i < num_inputs; ++i) {
      const Tensor& x = inputs[i];
      if (sliced[i] && x.defined() && x.dtype() == y.dtype() && x.device() == y.device() && x.shape() == shape &&
          x.is_contiguous() && !x.requires_grad() && x.impl_ref()->use_count() == 1 && x.storage()->use_count() == 1)
        return x;
    }
    return {};
  }

  /** Takes its inputs (onnx::Replay): one that the enclosing graph has read for the last time
   *  is held here alone, so a whole run writes into it as the unfused nodes would have, and a
   *  blocked run may put its result there. */
  std::vector<Tensor> operator()(std::vector<Tensor> inputs) const {
    if (unblocked(inputs)) return {run(std::move(inputs))};
    Shape shape;  // the elementwise chain's output: its sliced inputs broadcast
    for (size_t i = 0; i < num_inputs; ++i)
      if (sliced[i] && inputs[i].defined()) shape = broadcast_shapes(shape, inputs[i].shape(), "fused");
    const int64_t rank = static_cast<int64_t>(shape.size());
    int64_t d = 0;  // blocks split the outermost dim over 1; the dims before it are 1
    while (d < rank && shape[static_cast<size_t>(d)] == 1) ++d;
    const int64_t numel = numel_of(shape);
    if (d == rank || numel < whole_below) return {run(std::move(inputs))};
    const int64_t extent = shape[static_cast<size_t>(d)];
    const int64_t inner = numel / extent;
    // Whole rows, and a multiple of kAlign elements where a row count can make one: a kernel's
    // vector loop then meets the same elements as on the whole tensor, and its scalar tail
    // (a last-bit difference in a transcendental) only at the end.
    const int64_t unit = kAlign / std::gcd(inner, kAlign);
    const int64_t rows = std::max(unit, block / inner / unit * unit);
    if (rows >= extent) return {run(std::move(inputs))};

    // A reduction runs on each block keeping its dims; the partial results, joined along d,
    // are reduced again by the node itself (a mean: as a sum, divided by the count after).
    const bool partial = reduces();
    // Blocks run on the pool's threads, each its kernels serially (the pool does not nest);
    // the first runs here, to learn the output's dtype and choose where the output goes.
    const int64_t num_blocks = (extent + rows - 1) / rows;
    std::vector<Tensor> parts(static_cast<size_t>(partial ? num_blocks : 0));
    Tensor out;
    auto run_block = [&](int64_t k) {
      const NoGradGuard no_grad;  // GradMode is per thread: nothing records here either
      const int64_t start = k * rows, len = std::min(rows, extent - start);
      std::vector<Tensor> block(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& x = inputs[i];
        const int64_t xd = d - (rank - (x.defined() ? x.dim() : 0));
        block[i] = i < num_inputs && sliced[i] && x.defined() && xd >= 0 && x.size(xd) == extent
                       ? x.narrow(xd, start, len)
                       : x;
      }
      Tensor y = run(std::move(block), partial);
      if (partial) {
        parts[static_cast<size_t>(k)] = std::move(y);
        return;
      }
      if (!out.defined()) out = dying_input(inputs, shape, y);
      if (!out.defined()) out = empty(shape, {.dtype = y.dtype(), .device = y.device()});
      if (y.numel() != len * inner || y.dtype() != out.dtype())
        ug::fail("[jit] a fused block computed ", y.dtype(), " ", y.shape(), ", expected ", len * inner,
                 " elements of ", out.dtype());
      // A plain copy, not copy_: blocks write disjoint rows of `out` at once, and copy_ would
      // bump its storage's version from several threads.
      const Tensor src = y.contiguous();
      std::memcpy(static_cast<char*>(out.raw_data()) + start * inner * out.element_size(), src.raw_data(),
                  src.nbytes());
    };
    run_block(0);
    parallel_for(num_blocks - 1, 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) run_block(k + 1);
    });
    if (!partial) return {out};
    std::vector<Tensor> args;
    for (int64_t id : last().inputs)  // the data, then the group's own inputs (axes)
      args.push_back(args.empty() ? cat(parts, d) : id < 0 ? Tensor() : inputs[static_cast<size_t>(id)]);
    onnx::Node again = last();
    if (again.op_type == "ReduceMean") again.op_type = "ReduceSum";
    const onnx::OpContext ctx(again, args, whole.opset, whole.limits.max_elements);
    Tensor y = onnx::find_op(again.op_type)->run(ctx).at(0);
    if (last().op_type == "ReduceMean")
      y = y / Scalar(static_cast<double>(numel_of(shape) / std::max<int64_t>(1, y.numel())));
    return {y};
  }
};

/** Union-find over node indices. */
struct Sets {
  std::vector<size_t> parent;
  explicit Sets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t{0}); }
  size_t find(size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

/** Each value's producing node (-1: a graph input or initializer) and how many times it is read;
 *  a read by a subgraph (implicit input) or as a graph output counts twice, so that such a value
 *  is never taken for one read only. */
std::pair<std::vector<int64_t>, std::vector<size_t>> uses(const onnx::Graph& graph) {
  std::vector<int64_t> producer(graph.num_values, -1);
  std::vector<size_t> readers(graph.num_values, 0);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const onnx::Node& node = graph.nodes[n];
    for (int64_t id : node.inputs)
      if (id >= 0) ++readers[static_cast<size_t>(id)];
    for (int64_t id : node.implicit_inputs) readers[static_cast<size_t>(id)] += 2;
    for (int64_t id : node.outputs)
      if (id >= 0) producer[static_cast<size_t>(id)] = static_cast<int64_t>(n);
  }
  for (int64_t id : graph.output_ids) readers[static_cast<size_t>(id)] += 2;
  return {std::move(producer), std::move(readers)};
}

/** The applied form of a UgReplay node's call (graph/update_replay.h), or null. */
const graph::Replay* applied_replay(const onnx::Graph& graph, const onnx::Node& node) {
  if (node.op_type != "UgReplay") return nullptr;
  const auto index = node.attributes.find("index");
  const auto* i = index == node.attributes.end() ? nullptr : std::get_if<int64_t>(&index->second);
  if (!i || *i < 0 || static_cast<size_t>(*i) >= graph.replays.size()) return nullptr;
  const auto* replay = graph.replays[static_cast<size_t>(*i)].target<graph::Replay>();
  const auto* update = replay ? replay->target<graph::UpdateReplay>() : nullptr;
  return update && update->applied ? &update->applied : nullptr;
}

/** Folds each Add(x, u) where u, read by nothing else, is the update of x made by an op with an
 *  applied form (an optimizer's update of parameter x, then apply_updates) into that op, which
 *  then makes x + u itself in its own pass: one pass over the parameter instead of two. */
size_t fold_applied_updates(onnx::Graph& graph) {
  const auto counted = uses(graph);
  const std::vector<int64_t>& producer = counted.first;
  const std::vector<size_t>& readers = counted.second;
  std::vector<bool> folded(graph.nodes.size(), false);
  size_t count = 0;
  for (onnx::Node& add : graph.nodes) {
    if (add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1 || !add.implicit_inputs.empty())
      continue;
    for (size_t side = 0; side < 2; ++side) {
      const int64_t u = add.inputs[side], x = add.inputs[1 - side];
      if (u < 0 || x < 0 || readers[static_cast<size_t>(u)] != 1 || producer[static_cast<size_t>(u)] < 0) continue;
      onnx::Node& update = graph.nodes[static_cast<size_t>(producer[static_cast<size_t>(u)])];
      const graph::Replay* applied = applied_replay(graph, update);
      if (!applied || update.outputs.empty() || update.outputs[0] != u || update.inputs.empty() ||
          update.inputs[0] != x)
        continue;
      update.attributes["index"] = static_cast<int64_t>(graph.replays.size());
      graph.replays.push_back(*applied);
      update.outputs[0] = add.outputs[0];
      folded[static_cast<size_t>(&add - graph.nodes.data())] = true;
      ++count;
      break;
    }
  }
  if (!count) return 0;
  std::vector<onnx::Node> kept;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (!folded[n]) kept.push_back(std::move(graph.nodes[n]));
  graph.nodes = std::move(kept);
  onnx::plan_run(graph);
  return count;
}

/** Removes the stop_gradient call-backs (detach, no_grad results) whose input a node makes, their
 *  readers reading that input instead: this graph runs only where autograd does not record and no
 *  forward tangent flows (Program::operator()), with no derivative to stop. Not in a program with
 *  subgraphs (their captures name values too), nor where the input is an output already (two
 *  outputs would be one tensor). */
size_t drop_gradient_stops(onnx::Graph& graph) {
  for (const onnx::Node& node : graph.nodes)
    for (const auto& [name, value] : node.attributes)
      if (std::holds_alternative<std::shared_ptr<const onnx::Graph>>(value)) return 0;
  const std::vector<int64_t> producer = uses(graph).first;
  std::vector<int64_t> to(graph.num_values);
  for (size_t id = 0; id < to.size(); ++id) to[id] = static_cast<int64_t>(id);
  std::vector<bool> dropped(graph.nodes.size(), false);
  size_t count = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const onnx::Node& node = graph.nodes[n];
    const auto op = node.attributes.find("op");
    if (node.op_type != "UgReplay" || op == node.attributes.end() || node.inputs.size() != 1 ||
        node.outputs.size() != 1 || std::get<std::string>(op->second) != "stop_gradient")
      continue;
    if (node.inputs[0] < 0) continue;
    const int64_t in = to[static_cast<size_t>(node.inputs[0])];
    if (producer[static_cast<size_t>(in)] < 0 || std::ranges::find(graph.output_ids, in) != graph.output_ids.end())
      continue;
    to[static_cast<size_t>(node.outputs[0])] = in;
    dropped[n] = true;
    ++count;
  }
  if (!count) return 0;
  std::vector<onnx::Node> kept;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dropped[n]) continue;
    for (int64_t& id : graph.nodes[n].inputs)
      if (id >= 0) id = to[static_cast<size_t>(id)];
    for (int64_t& id : graph.nodes[n].implicit_inputs) id = to[static_cast<size_t>(id)];
    kept.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(kept);
  for (int64_t& id : graph.output_ids) id = to[static_cast<size_t>(id)];
  onnx::plan_run(graph);
  return count;
}

}  // namespace

FuseStats fuse(onnx::Graph& graph) {
  FuseStats stats;
  stats.stops = drop_gradient_stops(graph);
  stats.applied = fold_applied_updates(graph);
  const int64_t block = block_elements();
  if (block == 0) return stats;
  const size_t num_nodes = graph.nodes.size();
  const auto counted = uses(graph);
  const std::vector<int64_t>& producer = counted.first;
  const std::vector<size_t>& readers = counted.second;

  auto plain = [&](const onnx::Node& node) { return node.outputs.size() == 1 && node.implicit_inputs.empty(); };
  auto elementwise = [&](size_t n) { return plain(graph.nodes[n]) && is_elementwise(graph.nodes[n].op_type); };
  // A node joins the group of each elementwise producer whose output it alone reads; a
  // reduction only through its data input, and nothing joins it: it ends its group.
  // A group runs where its first node ran, so every input it reads from outside must be made
  // before that node: a group never runs later than its nodes would have (the values it
  // reads, a recomputed activation placed by rematerialize just before its late reader, are
  // not held longer). By root: the group's first node and the last maker of its inputs.
  Sets sets(num_nodes);
  std::vector<bool> joined(num_nodes, false);
  std::vector<int64_t> first(num_nodes), ready(num_nodes, -1);
  for (size_t n = 0; n < num_nodes; ++n) {
    const onnx::Node& node = graph.nodes[n];
    first[n] = static_cast<int64_t>(n);
    std::vector<size_t> groups;  // the roots n would join
    std::vector<bool> internal(node.inputs.size(), false);
    const bool reduction = plain(node) && is_reduction(node.op_type);
    for (size_t i = 0; (elementwise(n) || reduction) && i < (reduction ? 1 : node.inputs.size()); ++i) {
      const int64_t id = i < node.inputs.size() ? node.inputs[i] : -1;
      if (id < 0 || readers[static_cast<size_t>(id)] != 1) continue;
      const int64_t p = producer[static_cast<size_t>(id)];
      if (p < 0 || !elementwise(static_cast<size_t>(p))) continue;
      groups.push_back(sets.find(static_cast<size_t>(p)));
      internal[i] = true;
    }
    int64_t outside = -1;  // the last maker of the inputs n reads from outside the groups it joins
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] < 0) continue;
      const int64_t p = producer[static_cast<size_t>(node.inputs[i])];
      ready[n] = std::max(ready[n], p);  // n alone
      if (!internal[i]) outside = std::max(outside, p);
    }
    if (groups.empty()) continue;
    int64_t merged_first = first[n], merged_ready = outside;
    for (size_t r : groups) {
      merged_first = std::min(merged_first, first[r]);
      merged_ready = std::max(merged_ready, ready[r]);
    }
    if (merged_ready >= merged_first) continue;
    for (size_t r : groups) {
      sets.join(r, n);
      joined[r] = true;
    }
    joined[n] = true;
    const size_t root = sets.find(n);
    first[root] = merged_first;
    ready[root] = merged_ready;
  }

  std::unordered_map<size_t, std::vector<size_t>> members;  // root -> nodes in order
  for (size_t n = 0; n < num_nodes; ++n)
    if (joined[n]) members[sets.find(n)].push_back(n);

  std::vector<onnx::Node> nodes;
  for (size_t n = 0; n < num_nodes; ++n) {
    if (!joined[n]) {
      nodes.push_back(std::move(graph.nodes[n]));
      continue;
    }
    const std::vector<size_t>& group_nodes = members[sets.find(n)];
    if (group_nodes.front() != n) continue;  // the group runs where its first node ran
    auto group = std::make_shared<Group>();
    group->block = block;
    group->whole_below = block * kWholeBlocks;
    std::unordered_map<int64_t, int64_t> local;  // value id -> local value
    std::vector<int64_t> external;
    std::vector<bool> sliced;
    std::unordered_set<int64_t> made;
    for (size_t m : group_nodes)
      for (int64_t id : graph.nodes[m].outputs) made.insert(id);
    for (size_t m : group_nodes) {
      const onnx::Node& node = graph.nodes[m];
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const int64_t id = node.inputs[i];
        if (id < 0 || made.contains(id)) continue;
        // A reduction's axes are not data: blocks do not slice them.
        const bool data = !is_reduction(node.op_type) || i == 0;
        auto [it, fresh] = local.try_emplace(id, static_cast<int64_t>(external.size()));
        if (fresh) {
          external.push_back(id);
          sliced.push_back(data);
        } else if (data) {
          sliced[static_cast<size_t>(it->second)] = true;
        }
      }
    }
    onnx::Graph& whole = group->whole;
    int64_t next = static_cast<int64_t>(external.size());
    for (size_t m : group_nodes) {
      onnx::Node node = graph.nodes[m];
      for (int64_t& id : node.inputs)
        if (id >= 0) id = local.at(id);
      local[node.outputs[0]] = next;
      node.outputs[0] = next++;
      whole.nodes.push_back(std::move(node));
    }
    whole.opset = graph.opset;
    whole.limits = graph.limits;
    whole.num_values = static_cast<size_t>(next);
    whole.value_names.assign(whole.num_values, "fused");
    whole.output_ids = {next - 1};
    onnx::plan_run(whole);
    if (group->reduces()) {
      group->partial = whole;
      onnx::Node& reduce = group->partial.nodes.back();
      if (reduce.op_type == "ReduceMean") reduce.op_type = "ReduceSum";
      reduce.attributes["keepdims"] = int64_t{1};
      onnx::plan_run(group->partial);
    }
    group->num_inputs = external.size();
    group->sliced = std::move(sliced);

    onnx::Node fused;
    fused.op_type = "UgReplay";
    fused.name = "fused_" + std::to_string(stats.groups);
    fused.attributes["op"] = std::string("fused");
    fused.attributes["index"] = static_cast<int64_t>(graph.replays.size());
    fused.inputs = std::move(external);
    fused.outputs = graph.nodes[group_nodes.back()].outputs;
    fused.doc = graph.nodes[group_nodes.back()].doc;
    graph.replays.push_back([group](std::vector<Tensor> in) { return (*group)(std::move(in)); });
    nodes.push_back(std::move(fused));
    stats.nodes += group_nodes.size();
    ++stats.groups;
  }
  graph.nodes = std::move(nodes);
  onnx::plan_run(graph);
  return stats;
}

}  // namespace ug::compiler
