// ONNX's elementwise ops on uint16, uint32 and uint64. Those are shells in unigrad, as in
// PyTorch (storage, casts and views; no arithmetic), so these ops compute in a signed dtype and
// cast the result back: uint16 in int32 and uint32 in int64, which hold every value, and uint64
// in int64, whose bits are the same. Results are exact: the casts back wrap modulo 2^bits as
// the unsigned ops do. In int64, uint64's addition, multiplication and bit ops wrap alike;
// comparisons flip the top bit of both sides first (unsigned order is then signed order); the
// ops that read magnitudes (division, remainder, right shifts) refuse values of 2^63 or more.
#include <limits>
#include <string>
#include <unordered_map>

#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"

namespace ug::onnx {

namespace {

using Outputs = std::vector<Tensor>;

enum class Kind : uint8_t { Wrapping, Ordered, Magnitude };

struct Wrapped {
  Kind kind;
  OpFn original;
};

std::unordered_map<std::string_view, Wrapped>& wrapped() {
  static std::unordered_map<std::string_view, Wrapped> rows;
  return rows;
}

constexpr int64_t kTopBit = std::numeric_limits<int64_t>::min();

Outputs widened(const OpContext& c) {
  const Wrapped& w = wrapped().at(c.node().op_type);
  DType shell = DType::Bool;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i) && is_shell(c.input(i).dtype())) shell = c.input(i).dtype();
  if (shell == DType::Bool) return w.original(c);
  const DType wide = shell == DType::UInt16 ? DType::Int32 : DType::Int64;
  Kind kind = w.kind;
  if (c.node().op_type == "BitShift" && c.attr_string("direction", "") == "LEFT") kind = Kind::Wrapping;
  const bool flip = shell == DType::UInt64 && kind == Kind::Ordered;
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i) || c.input(i).dtype() != shell) {
      args.push_back(c.has_input(i) ? c.input(i) : Tensor());
      continue;
    }
    Tensor t = c.input(i).to(wide);
    if (flip) t = bitwise_xor(t, kTopBit);
    if (shell == DType::UInt64 && kind == Kind::Magnitude && lt(t, 0).any().item<bool>())
      c.fail("uint64 values of 2^63 or more are not supported here (ug computes uint64 in int64)");
    args.push_back(std::move(t));
  }
  const OpContext wide_context(c.node(), args, c.opset(), c.max_elements());
  Outputs out = w.original(wide_context);
  // The first output is the op's value (TopK's second, its indices, stays int64; ArgMax, whose
  // only output is an index, is not wrapped).
  if (!out.empty() && out[0].defined() && out[0].dtype() == wide)
    out[0] = (flip ? bitwise_xor(out[0], kTopBit) : out[0]).to(shell);
  return out;
}

}  // namespace

void widen_unsigned_ops(std::vector<OpSpec>& ops) {
  static constexpr std::pair<std::string_view, Kind> kOps[] = {
      {"Add", Kind::Wrapping},
      {"Sub", Kind::Wrapping},
      {"Mul", Kind::Wrapping},
      {"Sum", Kind::Wrapping},
      {"Equal", Kind::Wrapping},
      {"BitwiseAnd", Kind::Wrapping},
      {"BitwiseOr", Kind::Wrapping},
      {"BitwiseXor", Kind::Wrapping},
      {"BitwiseNot", Kind::Wrapping},
      {"Less", Kind::Ordered},
      {"LessOrEqual", Kind::Ordered},
      {"Greater", Kind::Ordered},
      {"GreaterOrEqual", Kind::Ordered},
      {"Max", Kind::Ordered},
      {"Min", Kind::Ordered},
      {"Clip", Kind::Ordered},
      {"TopK", Kind::Ordered},
      {"ReduceMax", Kind::Ordered},
      {"ReduceMin", Kind::Ordered},
      {"ReduceSum", Kind::Wrapping},
      {"Abs", Kind::Magnitude},
      {"Div", Kind::Magnitude},
      {"Mod", Kind::Magnitude},
      {"BitShift", Kind::Magnitude},  // a left shift wraps
  };
  for (OpSpec& row : ops)
    for (const auto& [type, kind] : kOps)
      if (row.op_type == type) {
        wrapped()[type] = {kind, row.run};
        row.run = widened;
      }
}

}  // namespace ug::onnx
