// The op table's interface (onnx/import_table.cpp): what the parser checks a node against and
// what the module calls to run it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ug/core/error.h"
#include "ug/onnx/graph.h"

namespace ug::onnx {

/** A node's doc (Python's traceback line, `  File "m.py", line 12, in f` then the code) on one
 *  line: `m.py:12 in f: the code` (graph_text.cpp). */
std::string doc_line(const std::string& doc);

/** What an op implementation sees: its node, its inputs (undefined where an optional input is
 *  absent) and the model's opset; attribute readers that name the node in their errors. */
class OpContext {
 public:
  OpContext(const Node& node, const std::vector<Tensor>& inputs, int64_t opset, int64_t max_elements,
            const std::vector<Tensor>* implicit_inputs = nullptr)
      : node_(node), inputs_(inputs), implicit_inputs_(implicit_inputs), opset_(opset), max_elements_(max_elements) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  /** LoadLimits::max_elements: the most elements a tensor sized by the file may have. */
  int64_t max_elements() const { return max_elements_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  /** Whether output i is wanted (present and named). */
  bool wants_output(size_t i) const { return i < node_.outputs.size() && node_.outputs[i] >= 0; }

  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  /** A required input; absent ones are an error naming the node. */
  const Tensor& input(size_t i) const;
  /** The values of an integer input (shapes, axes, indices), or nullopt when it is absent. */
  std::optional<std::vector<int64_t>> ints_input(size_t i) const;
  /** The value of a one-element input as a double. */
  double scalar_input(size_t i) const;

  bool has_attr(std::string_view name) const { return node_.attributes.contains(name); }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  int64_t attr_int(std::string_view name) const;
  double attr_float(std::string_view name, double fallback) const;
  std::string attr_string(std::string_view name, std::string_view fallback) const;
  std::optional<std::vector<int64_t>> attr_ints(std::string_view name) const;
  std::optional<std::vector<double>> attr_floats(std::string_view name) const;
  std::optional<std::vector<std::string>> attr_strings(std::string_view name) const;
  std::optional<Tensor> attr_tensor(std::string_view name) const;
  /** A required GRAPH attribute (a subgraph). */
  const Graph& attr_graph(std::string_view name) const;
  /** Runs subgraph attribute `name` on `inputs` (one per input of the subgraph), with the values
   *  it reads from the enclosing graph; checks and returns its outputs. */
  std::vector<Tensor> run_subgraph(std::string_view name, const std::vector<Tensor>& inputs) const;

  /** "[onnx] Conv node 'conv1' (opset 20): " + the pieces, then the node's doc where it has one
   *  (in a compiled program, the user code's line that traced the node). */
  template <class E = ValueError, class... Args> [[noreturn]] void fail(const Args&... args) const {
    const std::string at = node_.doc.empty() ? "" : " (at " + doc_line(node_.doc) + ")";
    ug::fail<E>("[onnx] ", node_.op_type, " node '", node_.name, "' (opset ", opset_, "): ", args..., at);
  }

 private:
  template <class T> const T* attr_of(std::string_view name, std::string_view kind) const;

  const Node& node_;
  const std::vector<Tensor>& inputs_;
  const std::vector<Tensor>* implicit_inputs_;
  int64_t opset_;
  int64_t max_elements_;
};

using OpFn = std::vector<Tensor> (*)(const OpContext&);

struct OpSpec {
  std::string_view op_type;
  OpFn run;
  size_t min_inputs, max_inputs, max_outputs;
  int64_t since_opset;  // the first opset that has the op (only some are newer than 13)
  std::vector<std::string_view> required_attributes;
};

// Rows kept in files of their own (onnx/import_<topic>.cpp), appended by table().
void add_normalization_ops(std::vector<OpSpec>& ops);
void add_pooling_ops(std::vector<OpSpec>& ops);
void add_indexing_ops(std::vector<OpSpec>& ops);
void add_linalg_ops(std::vector<OpSpec>& ops);
void add_resize_ops(std::vector<OpSpec>& ops);
void add_quantize_ops(std::vector<OpSpec>& ops);
void add_bitwise_ops(std::vector<OpSpec>& ops);
void add_control_flow_ops(std::vector<OpSpec>& ops);
void add_sampling_ops(std::vector<OpSpec>& ops);
void add_detection_ops(std::vector<OpSpec>& ops);
void add_col2im_ops(std::vector<OpSpec>& ops);
void add_signal_ops(std::vector<OpSpec>& ops);
void add_rnn_ops(std::vector<OpSpec>& ops);
void add_optional_ops(std::vector<OpSpec>& ops);
void add_linear_attention_ops(std::vector<OpSpec>& ops);
void add_causal_conv_ops(std::vector<OpSpec>& ops);
void add_tensor_scatter_ops(std::vector<OpSpec>& ops);
/** UgConvRelu (onnx/fuse_conv.cpp): Conv's inputs and attributes, then an optional residual. */
void add_fused_conv_ops(std::vector<OpSpec>& ops);
/** Makes the elementwise rows take uint16, uint32 and uint64 (unigrad's shell dtypes): called
 *  after every row is in. */
void widen_unsigned_ops(std::vector<OpSpec>& ops);

/** The entry for an op type, or null. */
const OpSpec* find_op(std::string_view op_type);

/** Load-time checks of a node against its entry: a supported op type for this opset, input
 *  and output counts, required attributes. Throws ValueError naming op type, node and opset. */
void check_node(const Node& node, int64_t opset);

}  // namespace ug::onnx
