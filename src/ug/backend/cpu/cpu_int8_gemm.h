// The uint8 x int8 GEMM of dynamic quantization (ops/quantized.h): exact int32 sums, on
// AVX512-VNNI's vpdpbusd where the CPU has it, in portable C++ otherwise.
#pragma once

#include <cstdint>
#include <utility>

namespace ug::cpu {

/** Whether this CPU runs vpdpbusd on 512-bit vectors (AVX512-VNNI with AVX-512 F/BW). */
bool cpu_has_avx512_vnni();

/** out[i][j] = sum_k (a[i][k] - a_zero_point) * b[j][k] for a uint8 a [M, K] and an int8 b
 *  [N, K] (both rows contiguous, as a Linear's input and weight are) into an int32 out [M, N],
 *  every sum exact (|sum| <= 255 * 128 * K fits int32 for K < 65793). `vnni` (only where
 *  cpu_has_avx512_vnni()) runs the vpdpbusd kernel; the portable loop gives the same integers. */
void gemm_u8s8(const uint8_t* a, int32_t a_zero_point, const int8_t* b, int32_t* out, int64_t M, int64_t N, int64_t K,
               bool vnni);

/** The int32 words pack_u8s8 writes for an int8 b [N, K]. */
int64_t packed_u8s8_words(int64_t N, int64_t K);
/** b [N, K] as the vnni kernel reads it (16-column panels of k-quads, then each column's sum),
 *  into packed (packed_u8s8_words(N, K) words): a weight packed once for gemm_u8s8_packed. */
void pack_u8s8(const int8_t* b, int64_t N, int64_t K, int32_t* packed);
/** gemm_u8s8 (vnni) with b packed by pack_u8s8. */
void gemm_u8s8_packed(const uint8_t* a, int32_t a_zero_point, const int32_t* packed, int32_t* out, int64_t M, int64_t N,
                      int64_t K);

/** fbgemm's float epilogue on the product: out[i][j] = float(sum_ij) * scale[j] + bias[j]
 *  (float32 [M, N]; bias may be null), the sums those of gemm_u8s8 on b, or on packed where
 *  not null (vnni only). */
void linear_u8s8(const uint8_t* a, int32_t a_zero_point, const int8_t* b, const int32_t* packed, const float* scale,
                 const float* bias, float* out, int64_t M, int64_t N, int64_t K, bool vnni);

/** out[i] = clamp(round_half_even(x[i] * inv_scale) + zero_point, 0, 255): the input of
 *  dynamic quantization to uint8 in one pass (torch.quantize_per_tensor's rounding); NaN
 *  gives 0. `vnni`: on AVX-512 (only where cpu_has_avx512_vnni()). */
void quantize_u8(const float* x, int64_t n, float inv_scale, int32_t zero_point, uint8_t* out, bool vnni);

/** The least and greatest of n floats, NaNs skipped (+inf, -inf when there are none): the
 *  range dynamic quantization maps onto uint8, in one vectorised pass (on AVX-512 with
 *  `vnni`, only where cpu_has_avx512_vnni()). */
std::pair<float, float> float_range(const float* x, int64_t n, bool vnni);

}  // namespace ug::cpu
