// The ONNX quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the
// integer products MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, after onnx's
// reference implementation (onnx/reference/ops/op_*.py). Integer products are exact: the
// int32 sums the spec asks for are computed in float64, whose 53 bits hold them (products of
// 8-bit values summed over fewer than 2^37 terms), so the convolutions reuse Conv's float kernels.
#include <optional>
#include <string>
#include <utility>

#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/linalg.h"
#include "ug/ops/unary.h"

namespace ug::onnx {

namespace {

using Outputs = std::vector<Tensor>;

/** The range of a quantized integer dtype. */
std::pair<double, double> quant_range(const OpContext& c, DType t) {
  switch (t) {
    case DType::UInt8: return {0, 255};
    case DType::Int8: return {-128, 127};
    case DType::UInt16: return {0, 65535};
    case DType::Int16: return {-32768, 32767};
    default: c.fail<TypeError>("quantized dtype ", t, " is not supported (uint8, int8, uint16, int16)");
  }
}

/** A scale or zero point brought to broadcast against x (onnx's reshape_input): a scalar as is,
 *  a 1-d tensor along `axis`, or with block_size > 0 one value per block of `axis`. */
Tensor along_axis(const OpContext& c, const Tensor& v, const Tensor& x, int64_t axis, int64_t block,
                  std::string_view what) {
  if (v.dim() == 0) return v;
  if (v.numel() == 1) return v.reshape({});
  const int64_t rank = x.dim();
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for an input of shape ", x.shape());
  if (axis < 0) axis += rank;
  if (block == 0) {
    if (v.dim() != 1 || v.size(0) != x.size(axis))
      c.fail(what, " of shape ", v.shape(), " must be a scalar or hold one value per index of axis ", axis,
             " of the input ", x.shape());
    Dims dims(static_cast<size_t>(rank), 1);
    dims[static_cast<size_t>(axis)] = v.size(0);
    return v.reshape(dims);
  }
  if (block < 0) c.fail("block_size must be positive, got ", block);
  bool fits = v.dim() == rank && v.size(axis) == (x.size(axis) + block - 1) / block;
  for (int64_t d = 0; fits && d < rank; ++d) fits = d == axis || v.size(d) == x.size(d);
  if (!fits)
    c.fail(what, " of shape ", v.shape(), " does not tile the input ", x.shape(), " in blocks of ", block,
           " along axis ", axis);
  Dims expanded(v.shape().begin(), v.shape().end());
  expanded.insert(expanded.begin() + axis + 1, block);
  Dims merged(v.shape().begin(), v.shape().end());
  merged[static_cast<size_t>(axis)] *= block;
  return v.unsqueeze(axis + 1).expand(expanded).reshape(merged).narrow(axis, 0, x.size(axis));
}

Outputs quantize_linear_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = c.attr_int("axis", 1), block = c.attr_int("block_size", 0);
  const std::string what = "QuantizeLinear node '" + c.node().name + "'";
  DType out = DType::UInt8;
  if (c.attr_int("output_dtype", 0) != 0) out = dtype_from_onnx(c.attr_int("output_dtype"), what);
  if (c.has_input(2)) {
    if (c.attr_int("output_dtype", 0) != 0 && c.input(2).dtype() != out)
      c.fail<TypeError>("output_dtype ", out, " differs from the zero point's dtype ", c.input(2).dtype());
    out = c.input(2).dtype();
  }
  const auto [lo, hi] = quant_range(c, out);
  Tensor scale = along_axis(c, c.input(1), x, axis, block, "the scale");
  Tensor xs = x;
  if (c.attr_int("precision", 0) != 0) {
    const DType p = dtype_from_onnx(c.attr_int("precision"), what);
    xs = xs.to(p);
    scale = scale.to(p);
  }
  Tensor q = div(xs, scale).round().to(DType::Float64);
  if (c.has_input(2)) q = add(q, along_axis(c, c.input(2), x, axis, block, "the zero point").to(DType::Float64));
  return {q.clamp(Scalar(lo), Scalar(hi)).to(out)};
}

Outputs dequantize_linear_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (is_floating(x.dtype()) || x.dtype() == DType::Bool)
    c.fail<TypeError>("the input must be a quantized integer tensor, got ", x.dtype());
  const int64_t axis = c.attr_int("axis", 1), block = c.attr_int("block_size", 0);
  const Tensor scale = along_axis(c, c.input(1), x, axis, block, "the scale");
  Tensor dx = x.to(DType::Float32);
  if (c.has_input(2)) {
    if (c.input(2).dtype() != x.dtype())
      c.fail<TypeError>("the zero point's dtype ", c.input(2).dtype(), " differs from the input's ", x.dtype());
    dx = sub(dx, along_axis(c, c.input(2), x, axis, block, "the zero point").to(DType::Float32));
  }
  const DType out = c.attr_int("output_dtype", 0) != 0
                        ? dtype_from_onnx(c.attr_int("output_dtype"), "DequantizeLinear node '" + c.node().name + "'")
                        : c.input(1).dtype();
  return {mul(dx, scale).to(out)};
}

Outputs dynamic_quantize_linear_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dtype() != DType::Float32) c.fail<TypeError>("the input must be float32, got ", x.dtype());
  if (x.numel() == 0) c.fail("the input is empty, so it has no range to quantize");
  const Tensor xd = x.detach();
  const Tensor hi = maximum(xd.max(), 0.0f), lo = minimum(xd.min(), 0.0f);
  const Tensor range = sub(hi, lo);
  const Tensor scale = div(where(eq(range, 0.0f), 1.0f, range), 255.0f);
  const Tensor zero_point = sub(0.0f, div(lo, scale)).clamp(Scalar(0.0), Scalar(255.0)).round();
  const Tensor y = add(div(x, scale).round(), zero_point).clamp(Scalar(0.0), Scalar(255.0));
  return {y.to(DType::UInt8), scale, zero_point.to(DType::UInt8)};
}

/** A quantized operand less its zero point, exactly, in float64. A zero point with one value
 *  per row (MatMulInteger's A) or per output channel (a convolution's weight) lines up with
 *  dim `per_dim` of x. */
Tensor centred(const OpContext& c, const Tensor& x, const std::optional<Tensor>& zero_point, int64_t per_dim,
               std::string_view what) {
  if (x.dtype() != DType::UInt8 && x.dtype() != DType::Int8)
    c.fail<TypeError>(what, " must be uint8 or int8, got ", x.dtype());
  Tensor v = x.to(DType::Float64);
  if (!zero_point) return v;
  const Tensor& z = *zero_point;
  if (z.dtype() != x.dtype())
    c.fail<TypeError>("the zero point of ", what, " has dtype ", z.dtype(), ", ", what, " has ", x.dtype());
  if (z.numel() == 1) return sub(v, z.reshape({}).to(DType::Float64));
  const int64_t d = per_dim < 0 ? per_dim + x.dim() : per_dim;
  if (z.dim() != 1 || d < 0 || d >= x.dim() || z.size(0) != x.size(d))
    c.fail("the zero point of ", what, " has shape ", z.shape(), "; it takes a scalar or one value per index of dim ",
           per_dim, " of ", x.shape());
  Dims dims(static_cast<size_t>(x.dim() - d), 1);
  dims[0] = z.size(0);
  return sub(v, z.reshape(dims).to(DType::Float64));
}

std::optional<Tensor> optional_input(const OpContext& c, size_t i) {
  return c.has_input(i) ? std::optional(c.input(i)) : std::nullopt;
}

/** Conv's row run on other inputs: its attributes are the node's. */
Tensor convolve(const OpContext& c, const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  std::vector<Tensor> args{x, w};
  if (bias) args.push_back(*bias);
  const OpContext conv(c.node(), args, c.opset(), c.max_elements());
  return find_op("Conv")->run(conv).front();
}

Outputs matmul_integer_op(const OpContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  // A per-row zero point of A is refused, as onnxruntime does (onnx's reference broadcasts it
  // along the columns instead, which the spec does not say).
  if (c.has_input(2) && c.input(2).numel() != 1)
    c.fail("the zero point of A must be a scalar (per-row zero points are not supported), got shape ",
           c.input(2).shape());
  const Tensor a64 = centred(c, a, optional_input(c, 2), 0, "A");
  const Tensor b64 = centred(c, b, optional_input(c, 3), -1, "B");
  return {matmul(a64, b64).to(DType::Int32)};
}

Outputs conv_integer_op(const OpContext& c) {
  const Tensor x = centred(c, c.input(0), optional_input(c, 2), 0, "X");
  const Tensor w = centred(c, c.input(1), optional_input(c, 3), 0, "W");
  return {convolve(c, x, w, std::nullopt).to(DType::Int32)};
}

/** The requantized result of an integer product: round(acc * multiplier + zero point), saturated
 *  to the zero point's dtype (or the input's, without one), in float64 as numpy computes it. */
Tensor requantize(const OpContext& c, const Tensor& acc, const Tensor& multiplier, const std::optional<Tensor>& y_zero,
                  DType fallback) {
  const DType out = y_zero ? y_zero->dtype() : fallback;
  const auto [lo, hi] = quant_range(c, out);
  Tensor r = mul(acc, multiplier.to(DType::Float64));
  if (y_zero) r = add(r, y_zero->to(DType::Float64));
  return r.round().clamp(Scalar(lo), Scalar(hi)).to(out);
}

/** A scale with one value per row or column (per_dim of the operand), or a scalar. */
Tensor scale_along(const OpContext& c, const Tensor& s, const Tensor& x, int64_t per_dim, std::string_view what) {
  if (s.numel() == 1) return s.reshape({});
  const int64_t d = per_dim < 0 ? per_dim + x.dim() : per_dim;
  if (s.dim() != 1 || d < 0 || d >= x.dim() || s.size(0) != x.size(d))
    c.fail(what, " has shape ", s.shape(), "; it takes a scalar or one value per index of dim ", per_dim, " of ",
           x.shape());
  Dims dims(static_cast<size_t>(x.dim() - d), 1);
  dims[0] = s.size(0);
  return s.reshape(dims);
}

Outputs qlinear_matmul_op(const OpContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(3);
  const Tensor acc = matmul(centred(c, a, c.input(2), -2, "a"), centred(c, b, c.input(5), -1, "b"));
  const Tensor multiplier =
      div(mul(scale_along(c, c.input(1), a, -2, "a_scale"), scale_along(c, c.input(4), b, -1, "b_scale")),
          c.input(6).reshape({}));
  return {requantize(c, acc, multiplier, c.input(7), a.dtype())};
}

Outputs qlinear_conv_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(3);
  std::optional<Tensor> bias;
  if (c.has_input(8)) {
    if (c.input(8).dtype() != DType::Int32) c.fail<TypeError>("the bias must be int32, got ", c.input(8).dtype());
    bias = c.input(8).to(DType::Float64);
  }
  const Tensor acc = convolve(c, centred(c, x, c.input(2), 0, "x"), centred(c, w, c.input(5), 0, "w"), bias);
  Tensor w_scale = c.input(4);
  if (w_scale.numel() > 1) {
    if (w_scale.dim() != 1 || w_scale.size(0) != w.size(0))
      c.fail("w_scale has shape ", w_scale.shape(), "; it takes a scalar or one value per output channel (", w.size(0),
             ")");
    Dims dims(static_cast<size_t>(acc.dim()), 1);
    dims[1] = w_scale.size(0);
    w_scale = w_scale.reshape(dims);
  } else {
    w_scale = w_scale.reshape({});
  }
  const Tensor multiplier = div(mul(c.input(1).reshape({}), w_scale), c.input(6).reshape({}));
  return {requantize(c, acc, multiplier, c.input(7), x.dtype())};
}

}  // namespace

void add_quantize_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"QuantizeLinear", quantize_linear_op, 2, 3, 1, 10, {}});
  ops.push_back({"DequantizeLinear", dequantize_linear_op, 2, 3, 1, 10, {}});
  ops.push_back({"DynamicQuantizeLinear", dynamic_quantize_linear_op, 1, 1, 3, 11, {}});
  ops.push_back({"MatMulInteger", matmul_integer_op, 2, 4, 1, 10, {}});
  ops.push_back({"ConvInteger", conv_integer_op, 2, 4, 1, 10, {}});
  ops.push_back({"QLinearMatMul", qlinear_matmul_op, 8, 8, 1, 10, {}});
  ops.push_back({"QLinearConv", qlinear_conv_op, 8, 9, 1, 10, {}});
}

}  // namespace ug::onnx
