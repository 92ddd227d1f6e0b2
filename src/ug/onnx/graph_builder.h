// The ONNX graph under construction during an export: value names of the traced tensors,
// which of their dims are dynamic, initializers and nodes. Internal to src/ug/onnx (it
// includes the protobuf classes, which stay out of unigrad's public headers).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <unordered_map>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/graph/capture.h"

namespace ug::onnx {

using graph::Attrs;
using graph::AttrValue;
using graph::CapturedCall;

/** Which dims of a value are symbolic (a dynamic axis flows into them). */
using DynamicDims = std::vector<bool>;

::onnx::TensorProto_DataType onnx_dtype(DType dtype);

class GraphBuilder {
 public:
  GraphBuilder(::onnx::GraphProto& graph, int64_t opset, std::vector<std::pair<std::string, Tensor>> params);

  int64_t opset() const { return opset_; }

  /** Declares t a graph input; `dim_names` holds a name for each symbolic dim ("" = fixed). */
  void add_input(const Tensor& t, const std::string& name, const std::vector<std::string>& dim_names);
  /** Declares t's value a graph output of that name (through an Identity node). */
  void add_output(const Tensor& t, const std::string& name, const std::vector<std::string>& dim_names);

  /** The value name of t: a traced value or graph input, else a new initializer (a parameter
   *  under its name, anything else a constant). With `dtype`, the value converted to it. */
  std::string value(const Tensor& t, std::optional<DType> dtype = std::nullopt);
  /** t's dynamic dims (none for initializers). */
  DynamicDims dynamic(const Tensor& t) const;
  /** A new int64 1-D initializer (shapes, axes). */
  std::string ints(const std::vector<int64_t>& values);
  /** A new 0-d initializer of `dtype`. */
  std::string scalar(double value, DType dtype);
  /** A fresh value name. */
  std::string fresh(const std::string& hint);

  ::onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);
  /** The output name of a call's i-th output, bound to it. Its dynamic dims are `dynamic`, or
   *  by default those of the inputs' dims of the same size, lined up on the right. */
  std::string output(const CapturedCall& call, size_t i = 0, std::optional<DynamicDims> dynamic = std::nullopt);
  /** After a call's rule ran: its outputs the rule gave no value (max_pool's indices) fail
   *  when used, naming the op, instead of being exported as constants of their traced value. */
  void check_outputs(const CapturedCall& call);

 private:
  struct Value {
    std::string name;
    DynamicDims dynamic;
    Tensor tensor;  // keeps the address that keys values_ alive
  };
  std::string initializer(const Tensor& t, const std::string& name);
  /** The state_dict name of t, when t is (a handle of) a parameter or buffer. */
  std::optional<std::string> param_name(const Tensor& t) const;

  ::onnx::GraphProto& graph_;
  int64_t opset_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::unordered_map<const void*, Value> values_;
  std::unordered_map<const void*, std::pair<Tensor, std::string>> unexported_;  // the tensor, and why
  std::unordered_map<std::string, int64_t> counters_;
};

void set_attr(::onnx::NodeProto& node, const std::string& name, int64_t value);
void set_attr(::onnx::NodeProto& node, const std::string& name, double value);
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::string& value);

/** A traced call's attribute; raises when it is missing. */
const AttrValue& attr(const CapturedCall& call, const std::string& name);
int64_t attr_int(const CapturedCall& call, const std::string& name);
double attr_float(const CapturedCall& call, const std::string& name);
const std::vector<int64_t>& attr_ints(const CapturedCall& call, const std::string& name);
const std::string& attr_string(const CapturedCall& call, const std::string& name);
bool has_attr(const CapturedCall& call, const std::string& name);

}  // namespace ug::onnx
