// vpdpbusd multiplies 4 unsigned bytes of one operand by 4 signed bytes of the other and adds
// the 4 products to an int32 lane (no saturation, unlike AVX2's vpmaddubsw, so torch's 7-bit
// activations are not needed for exactness here). B is packed into 16-column panels: for each
// k-quad a 64-byte vector holds the 4 bytes b[j][4q..4q+3] of each of the 16 columns; a row of
// A is read 4 bytes at a time, broadcast to every lane. K is padded to a multiple of 4 with
// zeros in both packs. Only the functions marked UG_VNNI contain AVX-512 instructions.
#include "ug/backend/cpu/cpu_int8_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ug/core/thread_pool.h"

#define UG_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

namespace ug::cpu {

namespace {

constexpr int MR = 4;   // rows of A a microkernel keeps
constexpr int NR = 32;  // two panels of 16 columns: 8 accumulators

/** out rows [i0, i0 + mr) x panels' columns [j0, j0 + nr) from the packed a (rows of kp bytes)
 *  and bp (panel j0 / 16 onwards, kq quads of 64 bytes each). */
UG_VNNI void micro(const uint8_t* a, int64_t kp, const int8_t* bp, int64_t kq, int mr, int64_t nr, int32_t* out,
                   int64_t ldo) {
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
  for (int i = 0; i < mr; ++i) {
    const __mmask16 m0 = static_cast<__mmask16>(nr >= 16 ? 0xffff : (1u << nr) - 1);
    _mm512_mask_storeu_epi32(out + i * ldo, m0, acc[i][0]);
    if (two) {
      const int64_t r = nr - 16;
      _mm512_mask_storeu_epi32(out + i * ldo + 16, static_cast<__mmask16>(r >= 16 ? 0xffff : (1u << r) - 1), acc[i][1]);
    }
  }
}

void gemm_vnni(const uint8_t* a, const int8_t* b, int32_t* out, int64_t M, int64_t N, int64_t K) {
  const int64_t kp = (K + 3) / 4 * 4, kq = kp / 4, panels = (N + 15) / 16;
  // Packed B: panel p, quad q, column c at word (p * kq + q) * 16 + c; each word is 4 bytes of
  // a weight row, copied whole (the last one zero-padded).
  std::vector<int32_t> bp(static_cast<size_t>(panels * kq * 16), 0);
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t c = 0; c < 16 && p * 16 + c < N; ++c) {
        const int8_t* row = b + (p * 16 + c) * K;
        int32_t* d = bp.data() + p * kq * 16 + c;
        for (int64_t q = 0; q < K / 4; ++q) std::memcpy(d + q * 16, row + 4 * q, 4);
        if (K % 4) std::memcpy(d + (K / 4) * 16, row + K / 4 * 4, static_cast<size_t>(K % 4));
      }
  });
  std::vector<uint8_t> ap(static_cast<size_t>(M * kp), 0);
  for (int64_t i = 0; i < M; ++i) std::memcpy(ap.data() + i * kp, a + i * K, static_cast<size_t>(K));
  // Tasks: blocks of MR rows x NR columns.
  const int64_t row_blocks = (M + MR - 1) / MR, col_blocks = (N + NR - 1) / NR;
  parallel_for(row_blocks * col_blocks, std::max<int64_t>(1, (1 << 17) / (MR * NR * std::max<int64_t>(kp, 4))),
               [&](int64_t t0, int64_t t1) {
                 for (int64_t t = t0; t < t1; ++t) {
                   const int64_t ib = t / col_blocks, jb = t % col_blocks;
                   const int64_t i0 = ib * MR, j0 = jb * NR;
                   micro(ap.data() + i0 * kp, kp, reinterpret_cast<const int8_t*>(bp.data() + (j0 / 16) * kq * 16), kq,
                         static_cast<int>(std::min<int64_t>(MR, M - i0)), std::min<int64_t>(NR, N - j0),
                         out + i0 * N + j0, N);
                 }
               });
}

void gemm_portable(const uint8_t* a, const int8_t* b, int32_t* out, int64_t M, int64_t N, int64_t K) {
  parallel_for(M, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const uint8_t* x = a + i * K;
        const int8_t* w = b + j * K;
        int32_t s = 0;
        for (int64_t k = 0; k < K; ++k) s += int32_t{x[k]} * int32_t{w[k]};
        out[i * N + j] = s;
      }
  });
}

}  // namespace

bool cpu_has_avx512_vnni() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}

void gemm_u8s8(const uint8_t* a, const int8_t* b, int32_t* out, int64_t M, int64_t N, int64_t K, bool vnni) {
  if (M == 0 || N == 0) return;
  if (vnni) gemm_vnni(a, b, out, M, N, K);
  else gemm_portable(a, b, out, M, N, K);
}

}  // namespace ug::cpu
