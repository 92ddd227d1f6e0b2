// A bfloat16 GEMM of unigrad's own on AVX512-BF16's vdpbf16ps (Debian's OpenBLAS 0.3.21 has
// no sbgemm): products of bf16 operands summed in float32, rounded once at the end.
#pragma once

#include "ug/core/tensor.h"

namespace ug::cpu {

/** Whether this CPU runs vdpbf16ps (AVX512-BF16 with AVX-512 F/BW/VL). */
bool cpu_has_avx512_bf16();

/** Whether this CPU also runs AMX's bfloat16 tile products (AMX-TILE, AMX-BF16) and the OS lets
 *  this process use them (asked once). */
bool cpu_has_amx_bf16();

/** out[b] = a[b] @ b[b] for bfloat16 [B, M, K] x [B, K, N] operands with any strides (a
 *  transposed operand is read in place by the packing) into a bfloat16 out [B, M, N] with
 *  unit column stride, each element summed in float32 and rounded to nearest even once; a
 *  float32 out gets the float32 sums unrounded (for callers that add several products). Call
 *  only where cpu_has_avx512_bf16(). Each element's sum runs in one order whatever the
 *  thread count. With `amx` (only where cpu_has_amx_bf16()) the products run on AMX's tiles;
 *  AMX, like vdpbf16ps, takes bf16 subnormal inputs as zero and flushes float32 subnormal sums. */
void gemm_bf16(const Tensor& a, const Tensor& b, const Tensor& out, bool amx);

}  // namespace ug::cpu
