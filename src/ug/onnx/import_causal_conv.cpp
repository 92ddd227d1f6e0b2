// CausalConvWithState (opset 27): a depthwise 1-d convolution over the past state and the input,
// optionally followed by SiLU, whose last k - 1 padded steps are the next state.
#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/conv.h"
#include "ug/ops/join.h"
#include "ug/ops/unary.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

Outputs causal_conv_with_state_op(const OpContext& c) {
  const std::string activation = c.attr_string("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    c.fail("activation must be none, silu or swish, got \"", activation, "\"");
  const Tensor &x = c.input(0), &w = c.input(1);
  if (x.dim() != 3 || w.dim() != 3 || w.size(0) != x.size(1) || w.size(1) != 1 || w.size(2) < 1)
    c.fail("input must be (batch, channels, length) and weight (channels, 1, k), got ", x.shape(), " and ", w.shape());
  const int64_t batch = x.size(0), channels = x.size(1), k = w.size(2);
  Tensor past = zeros({batch, channels, k - 1}, {.dtype = x.dtype()});
  if (c.has_input(3)) {
    past = c.input(3);
    if (past.shape() != Shape{batch, channels, k - 1})
      c.fail("past_state must be (", batch, ", ", channels, ", ", k - 1, "), got ", past.shape());
  }
  if (c.has_input(2) && c.input(2).shape() != Shape{channels})
    c.fail("bias must be (", channels, "), got ", c.input(2).shape());
  const Tensor padded = concat({past, x}, 2);
  Tensor y =
      conv1d(padded, w, c.has_input(2) ? std::optional<Tensor>(c.input(2)) : std::nullopt, {1}, 0, {1}, channels);
  if (activation != "none") y = mul(y, sigmoid(y.to(DType::Float32)).to(y.dtype()));
  return {y, padded.narrow(2, padded.size(2) - (k - 1), k - 1)};
}

}  // namespace

void add_causal_conv_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"CausalConvWithState", causal_conv_with_state_op, 2, 4, 2, 27, {}});
}

}  // namespace ug::onnx
