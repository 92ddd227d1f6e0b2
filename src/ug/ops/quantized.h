// Dynamic quantization's kernels (torch.ao.quantization.quantize_dynamic, TFLite's
// Optimize.DEFAULT): affine 8-bit integers without a quantized tensor type. A quantized tensor
// is its integers (uint8 or int8) plus the scale and zero point the caller keeps, as
// torch's int_repr(), q_scale() and q_zero_point() give them apart.
#pragma once

#include <cstdint>

#include "ug/core/tensor.h"

namespace ug {

/** An affine map real = scale * (q - zero_point). */
struct QParams {
  double scale;
  int64_t zero_point;
};

/** torch's (fbgemm's) ChooseQuantizationParams: the map of [min(lo, 0), max(hi, 0)] onto
 *  [qmin, qmax] with 0 exact, the zero point nudged to an integer; the scale is a float32
 *  value, at least 6.1e-5 (the range widened to match), 0.1 where the range is empty. */
QParams choose_qparams(double lo, double hi, int64_t qmin, int64_t qmax);

/** torch.quantize_per_tensor(x, scale, zero_point, dtype).int_repr(): clamp(round_half_even(x *
 *  (1 / scale)) + zero_point) to dtype's range, for dtype uint8 (quint8) or int8 (qint8). */
Tensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype);
/** torch.quantize_per_channel: one scale (float) and zero point (integer) per index of `axis`. */
Tensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                            DType dtype);
/** (q - zero_point) * scale in float32: torch.dequantize of the tensor q, scale and zero_point
 *  stand for. */
Tensor dequantize(const Tensor& q, double scale, int64_t zero_point);
/** Per channel: scales and zero_points along `axis` of q. */
Tensor dequantize(const Tensor& q, const Tensor& scales, const Tensor& zero_points, int64_t axis);

/** torch.ops.quantized.linear_dynamic: x [..., in] (floating) is quantized to uint8 from its own
 *  min and max (choose_qparams over [0, 127] with reduce_range, as torch does on x86 for the
 *  AVX2 kernel's 16-bit sums, else [0, 255]); multiplied by the int8 weight [out, in] whose
 *  scale and zero point are scalars or one per output (per channel), in int32; the sums, less
 *  the zero points' terms, times x's scale times the weight's (in float32), plus bias (float,
 *  [out], optional). The result has x's dtype. `packed`: pack_quantized_weight(weight), to
 *  skip packing the weight at each call. No derivative: the weight is integers. */
Tensor quantized_linear_dynamic(const Tensor& x, const Tensor& weight, const Tensor& scale, const Tensor& zero_point,
                                const Tensor& bias = {}, bool reduce_range = true, const Tensor& packed = {});
/** The int8 weight [out, in] in the form the GEMM reads fastest (fbgemm's PackedLinearWeight),
 *  for quantized_linear_dynamic's `packed`, which then reads it in place of `weight` (the
 *  graph and exports still see `weight`); undefined where the backend has no packed form. */
Tensor pack_quantized_weight(const Tensor& weight);

/** The int32 product (a - a_zero_point) @ b^T of a uint8 [M, K] and an int8 b [N, K], every
 *  sum exact: the GEMM behind quantized_linear_dynamic (AVX512-VNNI where the CPU has it). */
Tensor matmul_u8s8(const Tensor& a, const Tensor& b, int64_t a_zero_point = 0);

}  // namespace ug
