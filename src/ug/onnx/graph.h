// The parsed form of an ONNX model (onnx/parse.cpp makes it from protobuf bytes): checked
// nodes in topological order over numbered values, with no protobuf type in sight, so the op
// table and the module never see the wire format.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/graph/capture.h"
#include "ug/onnx/import.h"
#include "ug/ops/binary_kinds.h"

namespace ug::onnx {

struct Graph;
struct OpSpec;

/** An attribute's value, by ONNX AttributeType: FLOAT, INT, STRING, TENSOR, FLOATS, INTS, STRINGS,
 *  GRAPH (the body of If, Loop, Scan). Other kinds (lists of graphs, sparse tensors) are kept as
 *  their type name, for error messages. */
struct Unsupported {
  std::string type;
};
using Attribute = std::variant<double, int64_t, std::string, Tensor, std::vector<double>, std::vector<int64_t>,
                               std::vector<std::string>, std::shared_ptr<const Graph>, Unsupported>;

/** What a compiled program's UgReplay node calls. It takes its arguments: run_graph has dropped
 *  the values the node reads for the last time, so an argument held by nothing else is the
 *  call's alone, and its buffer may take the result (a fused group, compiler/fuse.h). A
 *  graph::Replay (const arguments) converts to it. */
using Replay = std::function<std::vector<Tensor>(std::vector<Tensor>)>;

/** One node: value ids of its inputs (-1 for an absent optional input) and outputs. */
struct Node {
  std::string op_type;
  std::string name;
  std::map<std::string, Attribute, std::less<>> attributes;
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
  /** The enclosing graph's values its subgraphs read by name (ONNX's outer scope), read as inputs. */
  std::vector<int64_t> implicit_inputs;
  /** The node's doc_string: in a compiled program, the user code's line that traced it. */
  std::string doc;
};

/** How run_graph runs a node, resolved once when the graph is planned (plan_run) rather than at
 *  every run: the op's row (null for a UgReplay node), the replay it calls back, the elementwise
 *  op it may compute into a dying operand (and whether either operand may take it), and which
 *  inputs it reads for the last time (moved into its call, not copied: no reference counting). */
struct NodePlan {
  const OpSpec* op = nullptr;
  int64_t replay = -1;
  std::optional<std::pair<ops::BinaryOp, bool>> in_place;
  std::vector<bool> moves;  // by input
};

struct Graph {
  int64_t opset = 0;
  size_t num_values = 0;
  std::vector<std::string> value_names;  // by value id
  std::vector<ValueInfo> inputs, outputs;
  /** Whether each input / output declared a shape; without one any rank is accepted. */
  std::vector<bool> input_has_shape;
  std::vector<int64_t> input_ids, output_ids;
  /** Initializers in file order: their names and values (the module takes them over). */
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<int64_t> initializer_ids;
  /** The outputs that are initializers, as (output index, initializer index): run_graph returns
   *  those tensors themselves. */
  std::vector<std::pair<size_t, size_t>> initializer_outputs;
  /** In a subgraph: the values it takes from the enclosing graph, and for each the index in its
   *  node's implicit_inputs. */
  std::vector<int64_t> capture_ids;
  std::vector<size_t> capture_slots;
  std::vector<Node> nodes;
  /** For each node, the values it reads for the last time (forward drops them after it). */
  std::vector<std::vector<int64_t>> last_uses;
  /** Whether a node or the graph's outputs read each value (forward drops the others at once). */
  std::vector<bool> read;
  /** By node: how run_graph calls it. */
  std::vector<NodePlan> plans;
  LoadLimits limits;
  /** What the UgReplay nodes of a compiled program call, by their "index" (empty in a graph
   *  read from a file, where such a node fails). */
  std::vector<Replay> replays;
};

/** The external-data location of an initializer whose value a compiled program's trace holds
 *  (GraphBuilder::held): no bytes are serialized for it, and parse_model is given the tensor. */
inline constexpr std::string_view kHeldLocation = "ug:held";

/** Parses and checks a serialized ModelProto; external data is read relative to base_dir
 *  (refused when base_dir is empty), and a root initializer located at kHeldLocation is that
 *  tensor of `held`, by name, not a copy. Throws ValueError / TypeError naming what is wrong. */
Graph parse_model(std::string_view bytes, const std::string& base_dir, const LoadLimits& limits,
                  const std::vector<std::pair<std::string, Tensor>>& held = {});

/** Sets `last_uses`, `read`, `plans` and `initializer_outputs` from the nodes, outputs and
 *  initializers (parse_model does; a pass that rewrites the graph does again). */
void plan_run(Graph& graph);

/** Which of a node's operands run_graph may write its result into when the operand dies there
 *  (its buffer the node's alone, of the result's dtype and shape): 0 none, 1 the first, 2
 *  either (compiler/remat.cpp weighs a program's memory with it). */
int in_place_operands(const Node& node);

/** The graph as text, one node a line, for reading (jax's lower(...).as_text()):
 *    graph(%x: float32[3, 4]) {
 *      %w = constant float32[4, 5]
 *      %v3 = MatMul(%x, %w)  # model.py:12
 *      return %v3
 *    }
 *  attributes in brackets after the op, "_" for an absent optional input, the user code's line
 *  that traced a node after it. */
std::string to_text(const Graph& graph);

/** Runs a graph's nodes over `values` (by value id, with the inputs, initializers and captures
 *  set) and returns its outputs. */
std::vector<Tensor> run_graph(const Graph& graph, std::vector<Tensor> values);

/** The ug dtype of an ONNX TensorProto.DataType, or a TypeError naming it. */
DType dtype_from_onnx(int64_t onnx_type, std::string_view what);

}  // namespace ug::onnx
