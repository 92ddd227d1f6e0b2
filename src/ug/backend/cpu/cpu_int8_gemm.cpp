// vpdpbusd multiplies 4 unsigned bytes of one operand by 4 signed bytes of the other and adds
// the 4 products to an int32 lane (no saturation, unlike AVX2's vpmaddubsw, so torch's 7-bit
// activations are not needed for exactness here). B is packed into 16-column panels: for each
// k-quad a 64-byte vector holds the 4 bytes b[j][4q..4q+3] of each of the 16 columns (one
// gather from 16 weight rows); a row of A is read 4 bytes at a time, broadcast to every lane.
// K is padded to a multiple of 4 with zeros in both packs; the packing sums each column too,
// for A's zero point. A quantized Linear packs its weight once (pack_u8s8, as fbgemm's
// PackedLinearWeight); gemm_u8s8 packs a plain int8 b at each call. Only the functions marked UG_VNNI contain AVX-512
// instructions.
#include "ug/backend/cpu/cpu_int8_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ug/backend/cpu/scratch.h"
#include "ug/core/thread_pool.h"

#define UG_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

namespace ug::cpu {

namespace {

constexpr int MR = 8;   // rows of A a microkernel keeps: 16 accumulators, 2 B vectors, 1 broadcast
constexpr int NR = 32;  // two panels of 16 columns

/** out rows [0, mr) x columns [0, nr) from the packed a (rows of kp bytes) and bp (two
 *  panels of kq quads of 64 bytes), less za times each column's sum (colsum): int32 sums, or
 *  with scale float(sum) * scale[j] + bias[j] (bias may be null) into a float out. */
UG_VNNI void micro(const uint8_t* a, int64_t kp, const int8_t* bp, int64_t kq, int mr, int64_t nr, int32_t za,
                   const int32_t* colsum, void* out, int64_t ldo, const float* scale, const float* bias) {
  __m512i acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
  const bool two = nr > 16;
  const int8_t* b1 = bp + kq * 64;
  for (int64_t q = 0; q < kq; ++q) {
    const __m512i v0 = _mm512_loadu_si512(bp + q * 64);
    const __m512i v1 = two ? _mm512_loadu_si512(b1 + q * 64) : _mm512_setzero_si512();
    for (int i = 0; i < MR; ++i) {
      if (i >= mr) break;
      int32_t word;
      std::memcpy(&word, a + i * kp + 4 * q, 4);
      const __m512i w = _mm512_set1_epi32(word);
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], w, v0);
      if (two) acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], w, v1);
    }
  }
  const __mmask16 m0 = static_cast<__mmask16>(nr >= 16 ? 0xffff : (1u << nr) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(nr >= 32 ? 0xffff : nr > 16 ? (1u << (nr - 16)) - 1 : 0);
  const __m512i vza = _mm512_set1_epi32(za);
  const __m512i c0 = _mm512_mullo_epi32(vza, _mm512_maskz_loadu_epi32(m0, colsum));
  const __m512i c1 = _mm512_mullo_epi32(vza, _mm512_maskz_loadu_epi32(m1, colsum + 16));
  if (!scale) {
    auto* o = static_cast<int32_t*>(out);
    for (int i = 0; i < mr; ++i) {
      _mm512_mask_storeu_epi32(o + i * ldo, m0, _mm512_sub_epi32(acc[i][0], c0));
      if (two) _mm512_mask_storeu_epi32(o + i * ldo + 16, m1, _mm512_sub_epi32(acc[i][1], c1));
    }
    return;
  }
  // fbgemm's float epilogue, a product then a sum, each rounded (mul_round_ps: no FMA
  // contraction merges them), as the int32 path's ops give.
  auto* o = static_cast<float*>(out);
  const __m512 s0 = _mm512_maskz_loadu_ps(m0, scale), s1 = _mm512_maskz_loadu_ps(m1, scale + 16);
  const __m512 bias0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 bias1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < mr; ++i) {
    const __m512 p0 = _mm512_mul_round_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][0], c0)), s0,
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_mask_storeu_ps(o + i * ldo, m0, _mm512_add_ps(p0, bias0));
    if (!two) continue;
    const __m512 p1 = _mm512_mul_round_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][1], c1)), s1,
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_mask_storeu_ps(o + i * ldo + 16, m1, _mm512_add_ps(p1, bias1));
  }
}

/** Rows [0, rows) of b (rows <= 16, K bytes each) as one panel: word (q, c) = bytes 4q..4q+3
 *  of row c, gathered 16 rows at a time (the last quad zero-padded), and each row's sum. */
UG_VNNI void pack_panel(const int8_t* b, int64_t K, int64_t rows, int64_t kq, int32_t* d, int32_t* colsum) {
  const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(static_cast<int32_t>(K)));
  const auto m = static_cast<__mmask16>(rows >= 16 ? 0xffff : (1u << rows) - 1);
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i sum = _mm512_setzero_si512();
  const int64_t full = K / 4;
  for (int64_t q = 0; q < full; ++q) {
    const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, b + 4 * q, 1);
    _mm512_storeu_si512(d + q * 16, v);
    sum = _mm512_dpbusd_epi32(sum, ones, v);
  }
  if (kq > full) {
    alignas(64) int32_t w[16] = {};
    for (int64_t c = 0; c < rows; ++c) std::memcpy(&w[c], b + c * K + 4 * full, static_cast<size_t>(K % 4));
    const __m512i v = _mm512_load_si512(w);
    _mm512_storeu_si512(d + full * 16, v);
    sum = _mm512_dpbusd_epi32(sum, ones, v);
  }
  _mm512_storeu_si512(colsum, sum);
}

/** The panels and column sums of b [N, K] (pack_u8s8's layout) into bp. */
void pack_vnni(const int8_t* b, int64_t N, int64_t K, int32_t* bp) {
  const int64_t kq = (K + 3) / 4, panels = (N + 15) / 16;
  int32_t* colsum = bp + panels * kq * 16;
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      pack_panel(b + p * 16 * K, K, std::min<int64_t>(16, N - p * 16), kq, bp + p * kq * 16, colsum + p * 16);
  });
}

/** out: int32 sums, or floats with scale (micro's epilogue). */
void gemm_vnni(const uint8_t* a, int32_t za, const int32_t* bp, void* out, int64_t M, int64_t N, int64_t K,
               const float* scale = nullptr, const float* bias = nullptr) {
  const int64_t kp = (K + 3) / 4 * 4, kq = kp / 4, panels = (N + 15) / 16;
  const int32_t* colsum = bp + panels * kq * 16;
  // A's rows padded to whole quads (zeros, which add nothing).
  thread_local Scratch<float> packed_a;
  auto* ap = reinterpret_cast<uint8_t*>(packed_a.get((M * kp + 3) / 4));
  for (int64_t i = 0; i < M && kp > 0; ++i) {  // K = 0: nothing to copy (and a may be null)
    std::memcpy(ap + i * kp, a + i * K, static_cast<size_t>(K));
    std::memset(ap + i * kp + K, 0, static_cast<size_t>(kp - K));
  }
  // Tasks: MR x NR blocks, column block by column block, so that a B panel (2 x KC/4 x 64
  // bytes) stays in L1 while every row block of A passes it.
  const int64_t row_blocks = (M + MR - 1) / MR, col_blocks = (N + NR - 1) / NR;
  const int64_t grain = std::max<int64_t>(1, (1 << 17) / (MR * NR * std::max<int64_t>(kp, 4)));
  parallel_for(row_blocks * col_blocks, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = t % row_blocks * MR, j0 = t / row_blocks * NR;
      micro(ap + i0 * kp, kp, reinterpret_cast<const int8_t*>(bp + j0 * kq), kq,
            static_cast<int>(std::min<int64_t>(MR, M - i0)), std::min<int64_t>(NR, N - j0), za, colsum + j0,
            static_cast<char*>(out) + (i0 * N + j0) * 4, N, scale ? scale + j0 : nullptr, bias ? bias + j0 : nullptr);
    }
  });
}

void gemm_portable(const uint8_t* a, int32_t za, const int8_t* b, int32_t* out, int64_t M, int64_t N, int64_t K) {
  parallel_for(M, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const uint8_t* x = a + i * K;
        const int8_t* w = b + j * K;
        int32_t s = 0;
        for (int64_t k = 0; k < K; ++k) s += (int32_t{x[k]} - za) * int32_t{w[k]};
        out[i * N + j] = s;
      }
  });
}

}  // namespace

bool cpu_has_avx512_vnni() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}

int64_t packed_u8s8_words(int64_t N, int64_t K) { return (N + 15) / 16 * ((K + 3) / 4 + 1) * 16; }

void pack_u8s8(const int8_t* b, int64_t N, int64_t K, int32_t* packed) {
  if (N > 0) pack_vnni(b, N, K, packed);
}

void gemm_u8s8_packed(const uint8_t* a, int32_t a_zero_point, const int32_t* packed, int32_t* out, int64_t M, int64_t N,
                      int64_t K) {
  if (M > 0 && N > 0) gemm_vnni(a, a_zero_point, packed, out, M, N, K);
}

void gemm_u8s8(const uint8_t* a, int32_t a_zero_point, const int8_t* b, int32_t* out, int64_t M, int64_t N, int64_t K,
               bool vnni) {
  if (M == 0 || N == 0) return;
  if (!vnni) return gemm_portable(a, a_zero_point, b, out, M, N, K);
  thread_local Scratch<float> packed_b;
  auto* bp = reinterpret_cast<int32_t*>(packed_b.get(packed_u8s8_words(N, K)));
  pack_vnni(b, N, K, bp);
  gemm_vnni(a, a_zero_point, bp, out, M, N, K);
}

namespace {

/** float_range on AVX-512: min_ps(x, lo) is lo where x is NaN, so NaNs are skipped. */
UG_VNNI std::pair<float, float> float_range_vnni(const float* x, int64_t n) {
  __m512 lo = _mm512_set1_ps(std::numeric_limits<float>::infinity()),
         hi = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    lo = _mm512_mask_min_ps(lo, m, v, lo);
    hi = _mm512_mask_max_ps(hi, m, v, hi);
  }
  return {_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi)};
}

}  // namespace

void linear_u8s8(const uint8_t* a, int32_t a_zero_point, const int8_t* b, const int32_t* packed, const float* scale,
                 const float* bias, float* out, int64_t M, int64_t N, int64_t K, bool vnni) {
  if (M == 0 || N == 0) return;
  if (!vnni) {
    std::vector<int32_t> sums(static_cast<size_t>(M * N));
    gemm_portable(a, a_zero_point, b, sums.data(), M, N, K);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        out[i * N + j] = static_cast<float>(sums[static_cast<size_t>(i * N + j)]) * scale[j] + (bias ? bias[j] : 0.0f);
    return;
  }
  if (!packed) {
    thread_local Scratch<float> packed_b;
    auto* bp = reinterpret_cast<int32_t*>(packed_b.get(packed_u8s8_words(N, K)));
    pack_vnni(b, N, K, bp);
    packed = bp;
  }
  gemm_vnni(a, a_zero_point, packed, out, M, N, K, scale, bias);
}

std::pair<float, float> float_range(const float* x, int64_t n, bool vnni) {
  if (vnni) return float_range_vnni(x, n);
  // 16 independent lanes (x < lo ? x : lo is minps, NaN skipped), so the loop vectorises
  // without a chain of dependent min's.
  constexpr int L = 16;
  float lo[L], hi[L];
  std::fill(lo, lo + L, std::numeric_limits<float>::infinity());
  std::fill(hi, hi + L, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      lo[l] = x[i + l] < lo[l] ? x[i + l] : lo[l];
      hi[l] = x[i + l] > hi[l] ? x[i + l] : hi[l];
    }
  for (; i < n; ++i) {
    lo[0] = x[i] < lo[0] ? x[i] : lo[0];
    hi[0] = x[i] > hi[0] ? x[i] : hi[0];
  }
  return {*std::min_element(lo, lo + L), *std::max_element(hi, hi + L)};
}

}  // namespace ug::cpu

namespace ug::cpu {

namespace {

/** quantize_u8 on 16 floats at a time: roundscale rounds half to even; max(q, 0) sends NaN
 *  to 0; the conversion to uint8 saturates at 255. */
UG_VNNI void quantize_vnni(const float* x, int64_t n, float inv_scale, float zp, uint8_t* out) {
  const __m512 vs = _mm512_set1_ps(inv_scale), vz = _mm512_set1_ps(zp), zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    const __m512 t = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs);
    const __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, vz), zero), _mm512_set1_ps(255.0f));
    _mm512_mask_cvtusepi32_storeu_epi8(out + i, m, _mm512_cvttps_epi32(q));
  }
}

void quantize_portable(const float* x, int64_t n, float inv_scale, float zp, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float q = std::nearbyint(x[i] * inv_scale) + zp;  // half to even, as torch's
    out[i] = static_cast<uint8_t>(q > 0.0f ? (q < 255.0f ? q : 255.0f) : 0.0f);
  }
}

}  // namespace

void quantize_u8(const float* x, int64_t n, float inv_scale, int32_t zero_point, uint8_t* out, bool vnni) {
  const auto zp = static_cast<float>(zero_point);
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    if (vnni) quantize_vnni(x + i0, i1 - i0, inv_scale, zp, out + i0);
    else quantize_portable(x + i0, i1 - i0, inv_scale, zp, out + i0);
  });
}

}  // namespace ug::cpu
