// Conv -> (Add) -> Relu as one node. ResNet-style networks spend a pass over memory on each
// relu and residual add after a convolution; here the convolution's own epilogue does them
// (ug::conv2d_relu), bit-identical to the three ops, which the node runs instead wherever the
// fused kernel does not apply.
#include "ug/onnx/fuse_conv.h"

#include "ug/onnx/import_util.h"
#include "ug/onnx/op_table.h"
#include "ug/ops/conv.h"

namespace ug::onnx {
namespace {

constexpr const char* kFused = "UgConvRelu";

/** One of the node's ops by its own row, on a copy of the node named as that op (rows and
 *  their wrappers look themselves up, and name themselves in errors, by the node's op_type;
 *  Add and Relu read no attribute, Conv reads its own, which the node kept). */
Outputs run_as(const char* op, const OpContext& c, const std::vector<Tensor>& args) {
  Node node = c.node();
  node.op_type = op;
  return find_op(op)->run(OpContext(node, args, c.opset(), c.max_elements()));
}

/** The node's three ops, each by its own row. */
Outputs composed(const OpContext& c) {
  Tensor y = run_as("Conv", c, {c.input(0), c.input(1), c.has_input(2) ? c.input(2) : Tensor()}).front();
  if (c.has_input(3)) y = run_as("Add", c, {y, c.input(3)}).front();
  return run_as("Relu", c, {y});
}

Outputs conv_relu_op(const OpContext& c) {
  const Tensor &x = c.input(0), &weight = c.input(1);
  const int64_t group = c.attr_int("group", 1);
  bool plain = x.dim() == 4 && weight.dim() == 4 && group >= 1;
  for (size_t i = 0; plain && i < c.num_inputs(); ++i) plain = !c.has_input(i) || c.input(i).dtype() == DType::Float32;
  if (!plain) return composed(c);
  const Window w = window_of(c, x, Dims(weight.shape().begin() + 2, weight.shape().end()), weight.size(0));
  if (!w.symmetric()) return composed(c);
  const std::optional<Tensor> bias = c.has_input(2) ? std::optional(c.input(2)) : std::nullopt;
  const std::optional<Tensor> residual = c.has_input(3) ? std::optional(c.input(3)) : std::nullopt;
  // run_graph has dropped the values this node reads for the last time: a residual held by
  // the node's argument alone (and this copy) may take the result.
  const bool dies = residual && residual->impl_ref()->use_count() == 2 && residual->storage()->use_count() == 1;
  return one(conv2d_relu(x, weight, bias, residual, w.strides, w.begin, w.dilations, group, dies));
}

}  // namespace

void fuse_conv_relu(Graph& g) {
  const size_t n_nodes = g.nodes.size();
  std::vector<int> readers(g.num_values, 0);
  std::vector<int64_t> producer(g.num_values, -1);
  for (size_t n = 0; n < n_nodes; ++n) {
    const Node& node = g.nodes[n];
    for (int64_t id : node.inputs)
      if (id >= 0) ++readers[static_cast<size_t>(id)];
    for (int64_t id : node.implicit_inputs) ++readers[static_cast<size_t>(id)];
    for (int64_t id : node.outputs)
      if (id >= 0) producer[static_cast<size_t>(id)] = static_cast<int64_t>(n);
  }
  for (int64_t id : g.output_ids) ++readers[static_cast<size_t>(id)];
  // A value read by its consumer alone, made by a node of type `op` with that one output.
  auto sole = [&](int64_t id, const char* op) -> Node* {
    if (id < 0 || readers[static_cast<size_t>(id)] != 1) return nullptr;
    const int64_t p = producer[static_cast<size_t>(id)];
    if (p < 0) return nullptr;
    Node& node = g.nodes[static_cast<size_t>(p)];
    return node.op_type == op && node.outputs.size() == 1 ? &node : nullptr;
  };
  std::vector<bool> dropped(n_nodes, false);
  auto drop = [&](Node* node) { dropped[static_cast<size_t>(node - g.nodes.data())] = true; };
  bool changed = false;
  for (size_t n = 0; n < n_nodes; ++n) {
    Node& relu = g.nodes[n];
    if (relu.op_type != "Relu" || relu.inputs.size() != 1 || relu.outputs.size() != 1) continue;
    Node *conv = sole(relu.inputs[0], "Conv"), *add = nullptr;
    int64_t residual = -1;
    if (!conv) {
      add = sole(relu.inputs[0], "Add");
      if (!add || add->inputs.size() != 2) continue;
      for (size_t k = 0; k < 2 && !conv; ++k)
        if ((conv = sole(add->inputs[k], "Conv"))) residual = add->inputs[1 - k];
      if (!conv || residual < 0) continue;
    }
    Node fused = std::move(*conv);
    fused.op_type = kFused;
    fused.inputs.resize(3, -1);  // bias absent: -1
    if (residual >= 0) fused.inputs.push_back(residual);
    fused.outputs = relu.outputs;
    drop(conv);
    if (add) drop(add);
    relu = std::move(fused);
    changed = true;
  }
  if (!changed) return;
  std::vector<Node> kept;
  kept.reserve(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n)
    if (!dropped[n]) kept.push_back(std::move(g.nodes[n]));
  g.nodes = std::move(kept);
  plan_run(g);
}

void add_fused_conv_ops(std::vector<OpSpec>& ops) { ops.push_back({kFused, conv_relu_op, 2, 4, 1, 1, {}}); }

}  // namespace ug::onnx
