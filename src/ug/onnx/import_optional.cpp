// The optional ops on tensors: ug.onnx has no optional or sequence values, so an optional here is a
// tensor input that is present (named) or absent (an empty name).
#include "ug/onnx/op_table.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

Outputs optional_has_element_op(const OpContext& c) { return {scalar_tensor(c.has_input(0), {.dtype = DType::Bool})}; }

Outputs optional_get_element_op(const OpContext& c) { return {c.input(0)}; }

}  // namespace

void add_optional_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"OptionalHasElement", optional_has_element_op, 0, 1, 1, 18, {}});
  ops.push_back({"OptionalGetElement", optional_get_element_op, 1, 1, 1, 15, {}});
}

}  // namespace ug::onnx
