// The ONNX bit ops on unigrad's bitwise ops: BitShift, BitwiseAnd, BitwiseOr, BitwiseXor (and
// BitCast, which reinterprets the bytes). BitwiseNot is a row of the unary ops (unary_kinds.h).
#include <cstring>
#include <string>

#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"

namespace ug::onnx {

namespace {

using Outputs = std::vector<Tensor>;

/** Both operands integer tensors of one dtype, as the ONNX ops take them. */
void check_operands(const OpContext& c, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    c.fail<TypeError>("the operands must have one dtype, got ", a.dtype(), " and ", b.dtype());
  if (!is_integral(a.dtype(), c.node().op_type != "BitShift"))
    c.fail<TypeError>("the operands must be integer tensors, got ", a.dtype());
}

template <Tensor (*Op)(const Tensor&, const Tensor&)> Outputs bitwise_op(const OpContext& c) {
  check_operands(c, c.input(0), c.input(1));
  return {Op(c.input(0), c.input(1))};
}

Outputs bit_shift_op(const OpContext& c) {
  check_operands(c, c.input(0), c.input(1));
  const std::string direction = c.attr_string("direction", "");
  if (direction == "LEFT") return {bitwise_left_shift(c.input(0), c.input(1))};
  if (direction == "RIGHT") return {bitwise_right_shift(c.input(0), c.input(1))};
  c.fail("direction must be LEFT or RIGHT, got '", direction, "'");
}

Outputs bit_cast_op(const OpContext& c) {
  const Tensor x = c.input(0).detach().contiguous();
  const DType to = dtype_from_onnx(c.attr_int("to"), "BitCast node '" + c.node().name + "'");
  if (itemsize(to) != itemsize(x.dtype()))
    c.fail<TypeError>("input and output must have one bit width, got ", x.dtype(), " (", itemsize(x.dtype()) * 8,
                      " bits) and ", to, " (", itemsize(to) * 8, " bits)");
  Tensor out = empty(Dims(x.shape().begin(), x.shape().end()), {.dtype = to, .device = x.device()});
  if (to == DType::Bool && x.dtype() != DType::Bool)
    c.fail<TypeError>("BitCast to bool is not supported: a bool holds the bytes 0 and 1 only");
  if (x.numel() > 0) std::memcpy(out.raw_data(), x.raw_data(), static_cast<size_t>(x.numel()) * itemsize(to));
  return {out};
}

}  // namespace

void add_bitwise_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"BitShift", bit_shift_op, 2, 2, 1, 11, {"direction"}});
  ops.push_back({"BitwiseAnd", bitwise_op<bitwise_and>, 2, 2, 1, 18, {}});
  ops.push_back({"BitwiseOr", bitwise_op<bitwise_or>, 2, 2, 1, 18, {}});
  ops.push_back({"BitwiseXor", bitwise_op<bitwise_xor>, 2, 2, 1, 18, {}});
  ops.push_back({"BitCast", bit_cast_op, 1, 1, 1, 26, {"to"}});
}

}  // namespace ug::onnx
