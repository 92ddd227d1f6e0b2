// torch's "opmath" for composites: an op built from several ops computes, on 16-bit operands,
// in float32 and rounds its result once, as torch's fused kernels do. Rounding after each step
// would put several 16-bit roundings into one result (thousands of ulps for sinc near its
// zeros, hundreds for lerp and addcmul), and round a Python number operand to 16 bits first.
#pragma once

#include "ug/core/tensor.h"

namespace ug::ops {

inline bool is_16_bit(DType t) { return t == DType::BFloat16 || t == DType::Float16; }
/** v rounded to a 16-bit dtype t (to nearest even); v itself for any other t. */
double rounded_to(double v, DType t);

/** fn(xs...), computed on float32 copies where the operands promote to a 16-bit dtype, the
 *  result rounded to it once. */
template <class Fn, class... Ts> Tensor in_opmath(Fn&& fn, const Ts&... xs) {
  DType out = DType::Bool;
  ((out = promote_types(out, xs.dtype())), ...);
  if (!is_16_bit(out)) return fn(xs...);
  return fn(xs.to(DType::Float32)...).to(out);
}

}  // namespace ug::ops
