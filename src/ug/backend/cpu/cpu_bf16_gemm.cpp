// The bfloat16 GEMM (cpu_bf16_gemm.h), laid out as BLIS lays out a GEMM: B is packed one
// column block (NC) at a time into NR-wide panels, A one row block (MC x KC) at a time into
// MR-high panels, and an MR x NR microkernel keeps its results in registers over KC/2 k-pairs.
// vdpbf16ps works on pairs: lane j of the accumulator gains a[2j]·b[2j] + a[2j+1]·b[2j+1], so
// both panels interleave consecutive k. For each k-pair a B panel holds NR words
// (b[k][j], b[k+1][j]) and an A panel MR words (a[i][k], a[i][k+1]), each word broadcast to
// every lane. A bf16 product is exact in float32, so an element is its K products summed in
// float32 in k order (within a KC block, then block after block): the error bound of a float32
// dot product. vdpbf16ps treats bf16 subnormal inputs as zero, as oneDNN's bf16 kernels do.
//
// Only the functions marked UG_BF16 contain AVX-512 instructions; the rest of the file is
// compiled for any x86-64, and the backend calls in only where cpu_has_avx512_bf16().
#include "ug/backend/cpu/cpu_bf16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ug/backend/cpu/scratch.h"
#include "ug/core/thread_pool.h"

#define UG_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace ug::cpu {

namespace {

constexpr int MR = 12;  // 12 x 2 accumulators of the 32 vector registers, 2 for B, 1 for A
constexpr int NR = 32;  // two vectors of 16 floats
// A B panel (KC x NR bf16, 32 KiB) is read from L1/L2 down a whole A block (MC x KC, 96 KiB,
// in L2); KC = 512 keeps the feed-forward products of a d = 128 transformer (K = 512) in one
// block, so no float32 tile is written between blocks (368 against 331 GFLOP/s with 256 on
// one Zen 4 core). KC is even so that every block starts at a k-pair.
constexpr int64_t MC = 96, KC = 512, NC = 512;
// The packed B of a column block (all of K) stays within 512 KiB: a long K (a weight gradient
// sums over the batch's rows) gets narrower column blocks rather than megabytes of scratch.
constexpr int64_t kPackedBWords = 1 << 17;
constexpr int64_t kMacsPerTask = 1 << 17;  // below this a task is not worth waking a thread

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/** A bfloat16 matrix as the packing reads it: element (r, c) at p[r * rs + c * cs]. */
struct View {
  const uint16_t* p;
  int64_t rs, cs;
  uint16_t at(int64_t r, int64_t c) const { return p[r * rs + c * cs]; }
};

uint32_t pair(uint16_t lo, uint16_t hi) { return uint32_t(lo) | uint32_t(hi) << 16; }
uint32_t load_pair(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/** Rows [k0, k0 + kc) x columns [j0, j0 + nc) of b into NR-wide panels of k-pair words, panel
 *  q at dst + q * ceil(kc / 2) * NR; columns past nc and the odd k's partner are zeros. */
UG_BF16 void pack_b(const View& b, int64_t k0, int64_t kc, int64_t j0, int64_t nc, uint32_t* dst) {
  const int64_t kcp = (kc + 1) / 2, full = kc / 2;
  for (int64_t q = 0; q * NR < nc; ++q) {
    const int64_t jq = j0 + q * NR, w = std::min<int64_t>(NR, nc - q * NR);
    uint32_t* d = dst + q * kcp * NR;
    if (b.cs == 1 && w == NR) {  // rows contiguous: interleave two rows of 32 with one permute each half
      alignas(64) static constexpr uint16_t lo[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
      alignas(64) static constexpr uint16_t hi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                      24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
      const __m512i ilo = _mm512_load_si512(lo), ihi = _mm512_load_si512(hi);
      for (int64_t p = 0; p < kcp; ++p) {
        const uint16_t* r0 = b.p + (k0 + 2 * p) * b.rs + jq;
        const __m512i x0 = _mm512_loadu_si512(r0);
        const __m512i x1 = p < full ? _mm512_loadu_si512(r0 + b.rs) : _mm512_setzero_si512();
        _mm512_storeu_si512(d + p * NR, _mm512_permutex2var_epi16(x0, ilo, x1));
        _mm512_storeu_si512(d + p * NR + 16, _mm512_permutex2var_epi16(x0, ihi, x1));
      }
      continue;
    }
    for (int64_t j = 0; j < NR; ++j) {
      if (j >= w) {
        for (int64_t p = 0; p < kcp; ++p) d[p * NR + j] = 0;
      } else if (b.rs == 1) {  // a transposed operand (x @ w.t()): each column's pairs are adjacent
        const uint16_t* col = b.p + (jq + j) * b.cs + k0;
        for (int64_t p = 0; p < full; ++p) d[p * NR + j] = load_pair(col + 2 * p);
        if (kcp > full) d[full * NR + j] = col[kc - 1];
      } else {
        for (int64_t p = 0; p < kcp; ++p)
          d[p * NR + j] = pair(b.at(k0 + 2 * p, jq + j), p < full ? b.at(k0 + 2 * p + 1, jq + j) : 0);
      }
    }
  }
}

/** Rows [i0, i0 + mc) x columns [k0, k0 + kc) of a into MR-high panels of k-pair words, panel r
 *  at dst + r * ceil(kc / 2) * MR; rows past mc and the odd k's partner are zeros. */
UG_BF16 void pack_a(const View& a, int64_t i0, int64_t mc, int64_t k0, int64_t kc, uint32_t* dst) {
  const int64_t kcp = (kc + 1) / 2, full = kc / 2;
  for (int64_t r = 0; r * MR < mc; ++r) {
    const int64_t ir = i0 + r * MR, h = std::min<int64_t>(MR, mc - r * MR);
    uint32_t* d = dst + r * kcp * MR;
    if (a.cs == 1) {  // rows contiguous: each row's pairs are adjacent
      for (int64_t i = 0; i < h; ++i) {
        const uint16_t* row = a.p + (ir + i) * a.rs + k0;
        for (int64_t p = 0; p < full; ++p) d[p * MR + i] = load_pair(row + 2 * p);
        if (kcp > full) d[full * MR + i] = row[kc - 1];
      }
    } else if (a.rs == 1) {  // a transposed operand (g.t() @ x): two contiguous k-rows per pair
      for (int64_t p = 0; p < kcp; ++p) {
        const uint16_t* r0 = a.p + (k0 + 2 * p) * a.cs + ir;
        for (int64_t i = 0; i < h; ++i) d[p * MR + i] = pair(r0[i], p < full ? r0[i + a.cs] : 0);
      }
    } else {
      for (int64_t p = 0; p < kcp; ++p)
        for (int64_t i = 0; i < h; ++i)
          d[p * MR + i] = pair(a.at(ir + i, k0 + 2 * p), p < full ? a.at(ir + i, k0 + 2 * p + 1) : 0);
    }
    for (int64_t p = 0; p < kcp; ++p)
      for (int64_t i = h; i < MR; ++i) d[p * MR + i] = 0;
  }
}

/** 16 floats rounded to bfloat16 to nearest even (NaN stays a quiet NaN), as BFloat16's
 *  conversion does, into the lanes of dst that m selects. (The maskz shifts: GCC 12 warns
 *  about the undefined vector inside the plain ones.) */
UG_BF16 inline void store_bf16(uint16_t* dst, __m512 v, __mmask16 m) {
  const __mmask16 all = 0xffff;
  const __m512i x = _mm512_castps_si512(v), high = _mm512_maskz_srli_epi32(all, x, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  __m512i r = _mm512_maskz_srli_epi32(all, _mm512_add_epi32(x, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), high, _mm512_set1_epi32(0x40));
  _mm512_mask_cvtepi32_storeu_epi16(dst, m, r);
}

/** Where a microkernel's block ends up: out, rounded to bfloat16, or out32 (row stride ld)
 *  once its last KC block is summed, a float32 tile (row stride ldt) between KC blocks. */
struct Dest {
  float* tile;
  int64_t ldt;
  uint16_t* out;
  float* out32;
  int64_t ld;
};

/** The MR x NR block of kcp k-pairs of packed a and b; rows x cols of it are real. */
UG_BF16 void microkernel(int64_t kcp, const uint32_t* a, const uint32_t* b, bool first, bool last, const Dest& d,
                         int rows, int cols) {
  __m512 c[MR][2];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    c[i][0] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(d.tile + i * d.ldt);
    c[i][1] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(d.tile + i * d.ldt + 16);
  }
  for (int64_t p = 0; p < kcp; ++p, a += MR, b += NR) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[i]));
      c[i][0] = _mm512_dpbf16_ps(c[i][0], ai, b0);
      c[i][1] = _mm512_dpbf16_ps(c[i][1], ai, b1);
    }
  }
  if (!last) {
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      _mm512_storeu_ps(d.tile + i * d.ldt, c[i][0]);
      _mm512_storeu_ps(d.tile + i * d.ldt + 16, c[i][1]);
    }
    return;
  }
  const __mmask16 m0 = cols >= 16 ? 0xffff : (1u << cols) - 1;
  const __mmask16 m1 = cols >= 32 ? 0xffff : cols > 16 ? (1u << (cols - 16)) - 1 : 0;
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    if (i >= rows) break;
    if (d.out32) {
      _mm512_mask_storeu_ps(d.out32 + i * d.ld, m0, c[i][0]);
      _mm512_mask_storeu_ps(d.out32 + i * d.ld + 16, m1, c[i][1]);
      continue;
    }
    store_bf16(d.out + i * d.ld, c[i][0], m0);
    store_bf16(d.out + i * d.ld + 16, c[i][1], m1);
  }
}

/** One batch entry: a [M, K] @ b [K, N] into out, or float32 out32 (row stride ldo). */
struct Product {
  View a, b;
  int64_t M, N, K;
  uint16_t* out;
  float* out32;
  int64_t ldo;
};

/** A task's packing buffers (of 32-bit words), kept across the products it runs. */
struct Workspace {
  Scratch<float> a, b, tile;
};
uint32_t* words(Scratch<float>& s, int64_t n) { return reinterpret_cast<uint32_t*>(s.get(n)); }

/** Row blocks [blk0, blk1) of the product's columns [jc, jc + nc), B packed in pb. */
void row_blocks(const Product& pr, const uint32_t* pb, int64_t jc, int64_t nc, int64_t blk0, int64_t blk1,
                Workspace& ws) {
  const int64_t ncp = round_up(nc, NR);
  uint32_t* pa = words(ws.a, MC * (KC / 2));
  float* tile = pr.K > KC ? ws.tile.get(MC * ncp) : nullptr;
  for (int64_t blk = blk0; blk < blk1; ++blk) {
    const int64_t i0 = blk * MC, mc = std::min(MC, pr.M - i0);
    for (int64_t pc = 0; pc < pr.K; pc += KC) {
      const int64_t kc = std::min(KC, pr.K - pc), kcp = (kc + 1) / 2;
      pack_a(pr.a, i0, mc, pc, kc, pa);
      const uint32_t* bblock = pb + pc / 2 * ncp;
      for (int64_t q = 0; q * NR < nc; ++q) {
        for (int64_t r = 0; r * MR < mc; ++r) {
          const int64_t i = i0 + r * MR, j = jc + q * NR;
          const int64_t at = i * pr.ldo + j;
          Dest d{tile ? tile + r * MR * ncp + q * NR : nullptr, ncp, pr.out32 ? nullptr : pr.out + at,
                 pr.out32 ? pr.out32 + at : nullptr, pr.ldo};
          microkernel(kcp, pa + r * kcp * MR, bblock + q * kcp * NR, pc == 0, pc + kc >= pr.K, d,
                      static_cast<int>(std::min<int64_t>(MR, pr.M - i)),
                      static_cast<int>(std::min<int64_t>(NR, nc - q * NR)));
        }
      }
    }
  }
}

/** One product; its row blocks split over the thread pool (each task with a workspace of
 *  its own) when `parallel`. */
void product(const Product& pr, bool parallel, Workspace& ws) {
  const int64_t blocks = (pr.M + MC - 1) / MC;
  const int64_t width = std::clamp<int64_t>(kPackedBWords / ((pr.K + 1) / 2) / NR * NR, NR, NC);
  for (int64_t jc = 0; jc < pr.N; jc += width) {
    const int64_t nc = std::min(width, pr.N - jc), ncp = round_up(nc, NR);
    uint32_t* pb = words(ws.b, (pr.K + 1) / 2 * ncp);
    for (int64_t pc = 0; pc < pr.K; pc += KC) pack_b(pr.b, pc, std::min(KC, pr.K - pc), jc, nc, pb + pc / 2 * ncp);
    if (!parallel) {
      row_blocks(pr, pb, jc, nc, 0, blocks, ws);
      continue;
    }
    parallel_for(blocks, std::max<int64_t>(1, kMacsPerTask / (MC * nc * pr.K)), [&](int64_t b0, int64_t b1) {
      Workspace own;
      row_blocks(pr, pb, jc, nc, b0, b1, own);
    });
  }
}

}  // namespace

bool cpu_has_avx512_bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

void gemm_bf16(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  const auto* pa = static_cast<const uint16_t*>(a.raw_data());
  const auto* pb = static_cast<const uint16_t*>(b.raw_data());
  const bool f32 = out.dtype() == DType::Float32;
  auto* po = static_cast<uint16_t*>(out.raw_data());
  auto* po32 = static_cast<float*>(out.raw_data());
  auto entry = [&](int64_t bi) {
    return Product{{pa + bi * a.stride(0), a.stride(1), a.stride(2)},
                   {pb + bi * b.stride(0), b.stride(1), b.stride(2)},
                   M,
                   N,
                   K,
                   f32 ? nullptr : po + bi * out.stride(0),
                   f32 ? po32 + bi * out.stride(0) : nullptr,
                   out.stride(1)};
  };
  // Many small products (attention's) go one per task; a few large ones split by row blocks.
  const int64_t macs = M * N * K;
  if (B > 1 && B * std::min<int64_t>(macs, kMacsPerTask) >= int64_t{get_num_threads()} * kMacsPerTask) {
    parallel_for(B, std::max<int64_t>(1, kMacsPerTask / std::max<int64_t>(macs, 1)), [&](int64_t b0, int64_t b1) {
      Workspace ws;
      for (int64_t bi = b0; bi < b1; ++bi) product(entry(bi), false, ws);
    });
    return;
  }
  Workspace ws;
  for (int64_t bi = 0; bi < B; ++bi) product(entry(bi), true, ws);
}

}  // namespace ug::cpu
