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

#include "ug/core/shape.h"
#include "ug/core/thread_pool.h"
#include "ug/graph/capture.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/onnx/graph.h"
#include "ug/onnx/op_table.h"

namespace ug::compiler {
namespace {

/** Output elements per block: every intermediate of a block (a few of them alive at once) stays
 *  in L2. Measured in docs/design.md ("Fused elementwise chains"); UG_JIT_FUSE_BLOCK, read when
 *  a program is compiled, sets another size (for measuring it), 0 turns fusion off. */
constexpr int64_t kBlockElements = 65536;

int64_t block_elements() {
  const char* env = std::getenv("UG_JIT_FUSE_BLOCK");
  return env && *env ? std::max<int64_t>(0, std::atoll(env)) : kBlockElements;
}
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

/** A fused group: its nodes in order over local slots (0 .. num_inputs-1 the fused node's
 *  inputs, then each node's output), run by operator(). */
struct Group {
  std::vector<onnx::Node> nodes;
  std::vector<std::vector<size_t>> drops;  // by node: the slots it reads for the last time
  std::vector<bool> sliced;                // by input: data a block takes a slice of
  size_t num_inputs = 0, num_slots = 0;
  int64_t opset = 0, max_elements = 0, block = kBlockElements;

  bool reduces() const { return is_reduction(nodes.back().op_type); }

  Tensor run_node(const onnx::Node& node, const std::vector<Tensor>& slots) const {
    std::vector<Tensor> args;
    for (int64_t id : node.inputs) args.push_back(id < 0 ? Tensor() : slots[static_cast<size_t>(id)]);
    const onnx::OpContext ctx(node, args, opset, max_elements);
    return onnx::find_op(node.op_type)->run(ctx).at(0);
  }

  /** The group's nodes on whole tensors (or on one block), the last node replaced by `last`. */
  Tensor run(std::vector<Tensor> slots, const onnx::Node* last = nullptr) const {
    slots.resize(num_slots);
    for (size_t n = 0; n < nodes.size(); ++n) {
      const onnx::Node& node = n + 1 == nodes.size() && last ? *last : nodes[n];
      Tensor out = run_node(node, slots);
      for (size_t s : drops[n]) slots[s] = Tensor();
      slots[static_cast<size_t>(node.outputs[0])] = std::move(out);
    }
    return slots[static_cast<size_t>(nodes.back().outputs[0])];
  }

  /** Whether a run must be the unfused computation on whole tensors: autograd records through
   *  it, an input carries a tangent or a batch (the conditions of run_graph's in-place), or
   *  an outer trace captures the ops. */
  static bool whole(const std::vector<Tensor>& inputs) {
    // Inside an outer trace the blocks' ops would be recorded one by one into that graph.
    if (graph::detail::current_capture) return true;
    return std::ranges::any_of(inputs, [](const Tensor& t) {
      return t.defined() &&
             ((GradMode::is_enabled() && t.requires_grad()) || forward::has_tangent(t) || t.impl().batch());
    });
  }

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const {
    if (whole(inputs)) return {run(inputs)};
    Shape shape;  // the elementwise chain's output: its sliced inputs broadcast
    for (size_t i = 0; i < num_inputs; ++i)
      if (sliced[i] && inputs[i].defined()) shape = broadcast_shapes(shape, inputs[i].shape(), "fused");
    const int64_t rank = static_cast<int64_t>(shape.size());
    int64_t d = 0;  // blocks split the outermost dim over 1; the dims before it are 1
    while (d < rank && shape[static_cast<size_t>(d)] == 1) ++d;
    if (d == rank || numel_of(shape) <= block) return {run(inputs)};
    const int64_t extent = shape[static_cast<size_t>(d)];
    const int64_t inner = numel_of(shape) / extent;
    // Whole rows, and a multiple of kAlign elements where a row count can make one: a kernel's
    // vector loop then meets the same elements as on the whole tensor, and its scalar tail
    // (a last-bit difference in a transcendental) only at the end.
    const int64_t unit = kAlign / std::gcd(inner, kAlign);
    const int64_t rows = std::max(unit, block / inner / unit * unit);
    if (rows >= extent) return {run(inputs)};

    // A reduction runs on each block keeping its dims; the partial results, joined along d,
    // are reduced again by the node itself (a mean: as a sum, divided by the count after).
    std::optional<onnx::Node> partial;
    if (reduces()) {
      partial = nodes.back();
      if (partial->op_type == "ReduceMean") partial->op_type = "ReduceSum";
      partial->attributes["keepdims"] = int64_t{1};
    }
    // Blocks run on the pool's threads, each its kernels serially (the pool does not nest);
    // the first runs here, to learn the output's dtype.
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
      Tensor y = run(std::move(block), partial ? &*partial : nullptr);
      if (partial) {
        parts[static_cast<size_t>(k)] = std::move(y);
        return;
      }
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
    std::vector<Tensor> final_inputs(inputs.begin(), inputs.end());
    final_inputs.resize(num_slots);
    const onnx::Node& reduce = nodes.back();
    final_inputs[static_cast<size_t>(reduce.inputs[0])] = cat(parts, d);
    onnx::Node again = reduce;
    if (again.op_type == "ReduceMean") again.op_type = "ReduceSum";
    Tensor y = run_node(again, final_inputs);
    if (reduce.op_type == "ReduceMean")
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

}  // namespace

FuseStats fuse(onnx::Graph& graph) {
  const int64_t block = block_elements();
  if (block == 0) return {};
  const size_t num_nodes = graph.nodes.size();
  std::vector<int64_t> producer(graph.num_values, -1);
  std::vector<size_t> readers(graph.num_values, 0);
  for (size_t n = 0; n < num_nodes; ++n) {
    const onnx::Node& node = graph.nodes[n];
    for (int64_t id : node.inputs)
      if (id >= 0) ++readers[static_cast<size_t>(id)];
    for (int64_t id : node.implicit_inputs) readers[static_cast<size_t>(id)] += 2;
    for (int64_t id : node.outputs)
      if (id >= 0) producer[static_cast<size_t>(id)] = static_cast<int64_t>(n);
  }
  for (int64_t id : graph.output_ids) readers[static_cast<size_t>(id)] += 2;

  auto plain = [&](const onnx::Node& node) { return node.outputs.size() == 1 && node.implicit_inputs.empty(); };
  auto elementwise = [&](size_t n) { return plain(graph.nodes[n]) && is_elementwise(graph.nodes[n].op_type); };
  // A node joins the group of each elementwise producer whose output it alone reads; a
  // reduction only through its data input, and nothing joins it: it ends its group.
  Sets sets(num_nodes);
  std::vector<bool> joined(num_nodes, false);
  for (size_t n = 0; n < num_nodes; ++n) {
    const onnx::Node& node = graph.nodes[n];
    const bool reduction = plain(node) && is_reduction(node.op_type);
    if (!elementwise(n) && !reduction) continue;
    for (size_t i = 0; i < (reduction ? std::min<size_t>(1, node.inputs.size()) : node.inputs.size()); ++i) {
      const int64_t id = node.inputs[i];
      if (id < 0 || readers[static_cast<size_t>(id)] != 1) continue;
      const int64_t p = producer[static_cast<size_t>(id)];
      if (p < 0 || !elementwise(static_cast<size_t>(p))) continue;
      sets.join(static_cast<size_t>(p), n);
      joined[n] = joined[static_cast<size_t>(p)] = true;
    }
  }

  std::unordered_map<size_t, std::vector<size_t>> members;  // root -> nodes in order
  for (size_t n = 0; n < num_nodes; ++n)
    if (joined[n]) members[sets.find(n)].push_back(n);

  FuseStats stats;
  std::vector<onnx::Node> nodes;
  for (size_t n = 0; n < num_nodes; ++n) {
    if (!joined[n]) {
      nodes.push_back(std::move(graph.nodes[n]));
      continue;
    }
    const std::vector<size_t>& group_nodes = members[sets.find(n)];
    if (group_nodes.back() != n) continue;  // the group runs where its last node ran
    auto group = std::make_shared<Group>();
    group->opset = graph.opset;
    group->block = block;
    group->max_elements = graph.limits.max_elements;
    std::unordered_map<int64_t, int64_t> local;  // value id -> slot
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
    int64_t next = static_cast<int64_t>(external.size());
    for (size_t k = 0; k < group_nodes.size(); ++k) {
      onnx::Node node = graph.nodes[group_nodes[k]];
      for (int64_t& id : node.inputs)
        if (id >= 0) id = local.at(id);
      local[node.outputs[0]] = next;
      node.outputs[0] = next++;
      group->nodes.push_back(std::move(node));
    }
    group->num_inputs = external.size();
    group->num_slots = static_cast<size_t>(next);
    group->sliced = std::move(sliced);
    group->drops.resize(group->nodes.size());
    std::vector<int64_t> last(group->num_slots, -1);
    for (size_t k = 0; k < group->nodes.size(); ++k)
      for (int64_t id : group->nodes[k].inputs)
        if (id >= 0) last[static_cast<size_t>(id)] = static_cast<int64_t>(k);
    for (size_t s = 0; s < last.size(); ++s)
      if (last[s] >= 0) group->drops[static_cast<size_t>(last[s])].push_back(s);

    onnx::Node fused;
    fused.op_type = "UgReplay";
    fused.name = "fused_" + std::to_string(stats.groups);
    fused.attributes["op"] = std::string("fused");
    fused.attributes["index"] = static_cast<int64_t>(graph.replays.size());
    fused.inputs = std::move(external);
    fused.outputs = graph.nodes[n].outputs;
    fused.doc = graph.nodes[n].doc;
    graph.replays.push_back([group](const std::vector<Tensor>& in) { return (*group)(in); });
    nodes.push_back(std::move(fused));
    stats.nodes += group_nodes.size();
    ++stats.groups;
  }
  graph.nodes = std::move(nodes);
  onnx::plan_liveness(graph);
  return stats;
}

}  // namespace ug::compiler
