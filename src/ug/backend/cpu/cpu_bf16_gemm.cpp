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
// Where the CPU has AMX (Sapphire Rapids and later), the microkernel is a 32 x 32 block of four
// tile products instead (tdpbf16ps: a 16 x 32 A tile times a 16-pair x 16 B tile, 8192
// multiply-adds an instruction, where vdpbf16ps does 32 and runs no faster than float32 FMAs on
// those CPUs). Its B tiles are the same packed panels, read 16 k-pairs at a time with a row
// stride; A is packed row-major (k contiguous) in 32-row panels, zero-padded to whole tiles.
//
// Only the functions marked UG_BF16 or UG_AMX contain AVX-512 or AMX instructions; the rest of
// the file is compiled for any x86-64, and the backend calls in only where cpu_has_avx512_bf16()
// (and cpu_has_amx_bf16() for amx).
#include "ug/backend/cpu/cpu_bf16_gemm.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "ug/backend/cpu/scratch.h"
#include "ug/core/thread_pool.h"

#define UG_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define UG_AMX __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

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
 *  q at dst + q * height * NR (height >= ceil(kc / 2): AMX's B tiles take 16 pairs at a time);
 *  columns past nc, the odd k's partner and the pairs past ceil(kc / 2) are zeros. */
UG_BF16 void pack_b(const View& b, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t height, uint32_t* dst) {
  const int64_t kcp = (kc + 1) / 2, full = kc / 2;
  for (int64_t q = 0; q * NR < nc; ++q) {
    const int64_t jq = j0 + q * NR, w = std::min<int64_t>(NR, nc - q * NR);
    uint32_t* d = dst + q * height * NR;
    std::memset(d + kcp * NR, 0, (height - kcp) * NR * sizeof(uint32_t));
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

constexpr int AMX_MR = 32, AMX_K = 32;  // a microkernel's rows (two A tiles); the k of one tile

/** AMX's tile configuration (palette 1): tiles 0-3 hold the 32 x 32 float32 block, 4-5 A, 6-7 B,
 *  each 16 rows of 64 bytes. */
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

/** The permutex2var indices that swap the off-diagonal b x b blocks of a row pair (x, y):
 *  x's row takes [x's first b, y's first b] of every 2b lanes (lo), y's the second halves (hi). */
struct BlockSwap {
  alignas(64) int32_t lo[16], hi[16];
  constexpr explicit BlockSwap(int b) : lo(), hi() {
    for (int l = 0; l < 16; ++l) {
      const bool first = l % (2 * b) < b;
      lo[l] = first ? l : 16 + l - b;
      hi[l] = first ? l + b : 16 + l;
    }
  }
};
constexpr BlockSwap kBlockSwaps[4] = {BlockSwap(8), BlockSwap(4), BlockSwap(2), BlockSwap(1)};

/** w[r] lane c <- w[c] lane r: a 16 x 16 transpose of 32-bit words, swapping the off-diagonal
 *  blocks of 8, then 4, 2 and 1 (each swap one permute per output row). */
UG_BF16 void transpose16(__m512i w[16]) {
  for (int s = 0, b = 8; s < 4; ++s, b /= 2) {
    const __m512i ilo = _mm512_load_si512(kBlockSwaps[s].lo), ihi = _mm512_load_si512(kBlockSwaps[s].hi);
    for (int j = 0; j < 16; ++j) {
      if (j % (2 * b) >= b) continue;
      const __m512i x = w[j], y = w[j + b];
      w[j] = _mm512_permutex2var_epi32(x, ilo, y);
      w[j + b] = _mm512_permutex2var_epi32(x, ihi, y);
    }
  }
}

/** Rows [i0, i0 + mc) x columns [k0, k0 + kc) of a, row-major with round_up(kc, 32) bf16 a row
 *  and round_up(mc, 32) rows: the zeros past mc and kc fill the last tiles. */
UG_BF16 void pack_a_rows(const View& a, int64_t i0, int64_t mc, int64_t k0, int64_t kc, uint16_t* dst) {
  const int64_t width = round_up(kc, AMX_K), rows = round_up(mc, AMX_MR);
  if (a.cs == 1) {
    for (int64_t i = 0; i < mc; ++i) {
      std::memcpy(dst + i * width, a.p + (i0 + i) * a.rs + k0, kc * sizeof(uint16_t));
      std::memset(dst + i * width + kc, 0, (width - kc) * sizeof(uint16_t));
    }
  } else if (a.rs == 1) {
    // A transposed operand (g.t() @ x, a weight's gradient): 16 rows by 16 k-pairs at a time,
    // each pair's two k-rows read whole and interleaved into words, the words then transposed.
    auto* words = reinterpret_cast<uint32_t*>(dst);
    for (int64_t ib = 0; ib < mc; ib += 16) {
      const int64_t h = std::min<int64_t>(16, mc - ib);
      const __mmask16 rows_in = h == 16 ? 0xffff : (1u << h) - 1;
      for (int64_t p0 = 0; p0 < width / 2; p0 += 16) {
        __m512i w[16];
        for (int q = 0; q < 16; ++q) {
          const int64_t k = 2 * (p0 + q);
          const uint16_t* row = a.p + (k0 + k) * a.cs + i0 + ib;
          const __m256i x0 = k < kc ? _mm256_maskz_loadu_epi16(rows_in, row) : _mm256_setzero_si256();
          const __m256i x1 = k + 1 < kc ? _mm256_maskz_loadu_epi16(rows_in, row + a.cs) : _mm256_setzero_si256();
          w[q] = _mm512_or_si512(_mm512_cvtepu16_epi32(x0), _mm512_slli_epi32(_mm512_cvtepu16_epi32(x1), 16));
        }
        transpose16(w);
        for (int64_t r = 0; r < h; ++r) _mm512_storeu_si512(words + (ib + r) * (width / 2) + p0, w[r]);
      }
    }
  } else {
    for (int64_t i = 0; i < mc; ++i)
      for (int64_t k = 0; k < width; ++k) dst[i * width + k] = k < kc ? a.at(i0 + i, k0 + k) : 0;
  }
  std::memset(dst + mc * width, 0, (rows - mc) * width * sizeof(uint16_t));
}

/** The 32 x 32 block of a (two 16-row tiles of a packed A panel, row stride width) times b (a B
 *  panel of height k-pairs), width / 32 tile steps; rows x cols of it are real. */
UG_AMX void amx_microkernel(int64_t width, const uint16_t* a, const uint32_t* b, bool first, bool last, const Dest& d,
                            int rows, int cols) {
  const int64_t lda = width * sizeof(uint16_t), ldb = NR * sizeof(uint32_t), ldt = d.ldt * sizeof(float);
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, d.tile, ldt);
    _tile_loadd(1, d.tile + 16, ldt);
    _tile_loadd(2, d.tile + 16 * d.ldt, ldt);
    _tile_loadd(3, d.tile + 16 * d.ldt + 16, ldt);
  }
  for (int64_t k = 0; k < width; k += AMX_K, b += AMX_K / 2 * NR) {
    _tile_loadd(4, a + k, lda);
    _tile_loadd(5, a + 16 * width + k, lda);
    _tile_loadd(6, b, ldb);
    _tile_loadd(7, b + 16, ldb);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (!last) {
    _tile_stored(0, d.tile, ldt);
    _tile_stored(1, d.tile + 16, ldt);
    _tile_stored(2, d.tile + 16 * d.ldt, ldt);
    _tile_stored(3, d.tile + 16 * d.ldt + 16, ldt);
    return;
  }
  alignas(64) float c[AMX_MR][NR];
  _tile_stored(0, &c[0][0], NR * sizeof(float));
  _tile_stored(1, &c[0][16], NR * sizeof(float));
  _tile_stored(2, &c[16][0], NR * sizeof(float));
  _tile_stored(3, &c[16][16], NR * sizeof(float));
  const __mmask16 m0 = cols >= 16 ? 0xffff : (1u << cols) - 1;
  const __mmask16 m1 = cols >= 32 ? 0xffff : cols > 16 ? (1u << (cols - 16)) - 1 : 0;
  for (int i = 0; i < rows; ++i) {
    const __m512 lo = _mm512_load_ps(&c[i][0]), hi = _mm512_load_ps(&c[i][16]);
    if (d.out32) {
      _mm512_mask_storeu_ps(d.out32 + i * d.ld, m0, lo);
      _mm512_mask_storeu_ps(d.out32 + i * d.ld + 16, m1, hi);
    } else {
      store_bf16(d.out + i * d.ld, lo, m0);
      store_bf16(d.out + i * d.ld + 16, hi, m1);
    }
  }
}

UG_AMX void amx_start() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}
UG_AMX void amx_stop() { _tile_release(); }

/** One batch entry: a [M, K] @ b [K, N] into out, or float32 out32 (row stride ldo). */
struct Product {
  View a, b;
  int64_t M, N, K;
  uint16_t* out;
  float* out32;
  int64_t ldo;
  bool amx;
  int64_t mc = MC;  // rows of a block (at most MC): the unit the pool splits
};

/** The k-pairs a packed B panel holds for a KC block of kc rows: AMX reads whole 16-pair tiles. */
int64_t panel_height(int64_t kc, bool amx) { return amx ? round_up((kc + 1) / 2, AMX_K / 2) : (kc + 1) / 2; }

/** A task's packing buffers (of 32-bit words), kept across the products it runs. */
struct Workspace {
  Scratch<float> a, b, tile;
};
uint32_t* words(Scratch<float>& s, int64_t n) { return reinterpret_cast<uint32_t*>(s.get(n)); }

/** Row blocks [blk0, blk1) of the product's columns [jc, jc + nc), B packed in pb. */
void row_blocks(const Product& pr, const uint32_t* pb, int64_t jc, int64_t nc, int64_t blk0, int64_t blk1,
                Workspace& ws) {
  const int64_t ncp = round_up(nc, NR);
  float* tile = pr.K > KC ? ws.tile.get(MC * ncp) : nullptr;
  if (pr.amx) {
    auto* pa = reinterpret_cast<uint16_t*>(ws.a.get(MC * KC / 2));
    amx_start();
    for (int64_t blk = blk0; blk < blk1; ++blk) {
      const int64_t i0 = blk * pr.mc, mc = std::min(pr.mc, pr.M - i0);
      for (int64_t pc = 0; pc < pr.K; pc += KC) {
        const int64_t kc = std::min(KC, pr.K - pc), width = round_up(kc, AMX_K), height = panel_height(kc, true);
        pack_a_rows(pr.a, i0, mc, pc, kc, pa);
        for (int64_t q = 0; q * NR < nc; ++q) {
          for (int64_t r = 0; r * AMX_MR < mc; ++r) {
            const int64_t i = i0 + r * AMX_MR, j = jc + q * NR, at = i * pr.ldo + j;
            Dest d{tile ? tile + r * AMX_MR * ncp + q * NR : nullptr, ncp, pr.out32 ? nullptr : pr.out + at,
                   pr.out32 ? pr.out32 + at : nullptr, pr.ldo};
            amx_microkernel(width, pa + r * AMX_MR * width, pb + pc / 2 * ncp + q * height * NR, pc == 0,
                            pc + kc >= pr.K, d, static_cast<int>(std::min<int64_t>(AMX_MR, pr.M - i)),
                            static_cast<int>(std::min<int64_t>(NR, nc - q * NR)));
          }
        }
      }
    }
    amx_stop();
    return;
  }
  uint32_t* pa = words(ws.a, MC * (KC / 2));
  for (int64_t blk = blk0; blk < blk1; ++blk) {
    const int64_t i0 = blk * pr.mc, mc = std::min(pr.mc, pr.M - i0);
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
 *  its own) when `parallel`, in blocks of fewer rows than MC where the product has too few for
 *  every thread (a weight's gradient of 128 rows: 96 + 32 kept one thread three times as long
 *  as the other, slower than one thread alone). */
void product(Product pr, bool parallel, Workspace& ws) {
  if (parallel) {
    const int64_t panel = pr.amx ? AMX_MR : MR, threads = get_num_threads();
    pr.mc = std::clamp(round_up((pr.M + threads - 1) / threads, panel), panel, MC);
  }
  const int64_t blocks = (pr.M + pr.mc - 1) / pr.mc;
  const int64_t width = std::clamp<int64_t>(kPackedBWords / ((pr.K + 1) / 2) / NR * NR, NR, NC);
  for (int64_t jc = 0; jc < pr.N; jc += width) {
    const int64_t nc = std::min(width, pr.N - jc), ncp = round_up(nc, NR);
    // Every KC block but the last is whole (KC / 2 pairs, a multiple of 16): only the last is padded.
    uint32_t* pb = words(ws.b, panel_height(pr.K, pr.amx) * ncp);
    for (int64_t pc = 0; pc < pr.K; pc += KC) {
      const int64_t kc = std::min(KC, pr.K - pc);
      pack_b(pr.b, pc, kc, jc, nc, panel_height(kc, pr.amx), pb + pc / 2 * ncp);
    }
    if (!parallel) {
      row_blocks(pr, pb, jc, nc, 0, blocks, ws);
      continue;
    }
    parallel_for(blocks, std::max<int64_t>(1, kMacsPerTask / (pr.mc * nc * pr.K)), [&](int64_t b0, int64_t b1) {
      Workspace own;
      row_blocks(pr, pb, jc, nc, b0, b1, own);
    });
  }
}

}  // namespace

bool cpu_has_amx_bf16() {
  // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE. Linux hands out the tile registers' state
  // only on request (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), once a process.
  static const bool usable = [] {
    unsigned eax, ebx, ecx, edx;
    if (!cpu_has_avx512_bf16() || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    if (!(edx & (1u << 22)) || !(edx & (1u << 24))) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}

bool cpu_has_avx512_bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

void gemm_bf16(const Tensor& a, const Tensor& b, const Tensor& out, bool amx) {
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
                   out.stride(1),
                   amx};
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
