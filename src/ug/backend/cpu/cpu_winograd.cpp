// F(2x2, 3x3): with B, G, A the transforms of Lavin & Gray's paper, a 4x4 input tile d and a
// filter g give the 2x2 outputs A^T [(G g G^T) . (B^T d B)] A. The 16 elementwise products,
// summed over input channels, are 16 matrix products U[k] [O, C] x V[k] [C, tiles]. Tiles are
// taken in blocks whose transformed inputs and products stay in cache; blocks run in parallel
// (OpenBLAS on the calling thread), and each output is computed by one block, so the bits do
// not depend on the thread count.
#include "ug/backend/cpu/cpu_winograd.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "ug/backend/cpu/scratch.h"
#include "ug/core/thread_pool.h"
#include "ug/ops/unary_kinds.h"

namespace ug::cpu {

namespace {

// The tile transforms are adds and subtractions over whole rows, which the compiler vectorises:
// built for AVX-512 and AVX2 too, the CPU's best picked when the library loads (function
// multiversioning); each gives the same bits.
#define UG_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))

// The transformed inputs and the products of one block of tiles, 16 * (C + O) floats a tile,
// take about this many floats: the products are then read back from the L2 cache. The weight
// gradient's products sum over the tiles instead, and run faster over longer blocks. Images
// of up to kImageFloats go whole into a block (Tiling).
constexpr int64_t kBlockFloats = int64_t{1} << 18;
constexpr int64_t kWeightGradBlockFloats = int64_t{1} << 20;
constexpr int64_t kImageFloats = int64_t{1} << 20;

// The filter transforms run over kFilters filters at a time, their taps gathered into
// [tap][filter] rows: the arithmetic then runs across filters (vectorised, and multiversioned
// where it has no product to fuse into an FMA: the same bits on every CPU) and U's 16 matrices
// are read or written kFilters floats in a row (one filter at a time touches 16 floats O * C
// apart, the same cache set when that is a power of two: 256 channels took 2.5 ms, now 0.5).
constexpr int64_t kFilters = 16;

/** U [16][O][C] = G g G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. */
UG_MULTIVERSION void transform_filters(const Winograd3x3& g, const float* w, bool transposed, float* U) {
  const int64_t OC = g.O * g.C;
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t c0 = 0; c0 < g.C; c0 += kFilters) {
      const int64_t n = std::min(kFilters, g.C - c0);
      float k[9][kFilters], t[12][kFilters], u[16][kFilters];
      if (n < kFilters) std::memset(k, 0, sizeof k);
      for (int64_t l = 0; l < n; ++l)
        for (int tap = 0; tap < 9; ++tap)
          k[tap][l] = transposed ? w[((c0 + l) * g.O + o) * 9 + 8 - tap] : w[(o * g.C + c0 + l) * 9 + tap];
      for (int j = 0; j < 3; ++j)  // t [4][3] = G k, row i at t[3 * i]
        for (int64_t l = 0; l < kFilters; ++l) {
          t[j][l] = k[j][l];
          t[3 + j][l] = 0.5f * (k[j][l] + k[3 + j][l] + k[6 + j][l]);
          t[6 + j][l] = 0.5f * (k[j][l] - k[3 + j][l] + k[6 + j][l]);
          t[9 + j][l] = k[6 + j][l];
        }
      for (int i = 0; i < 4; ++i)
        for (int64_t l = 0; l < kFilters; ++l) {
          const float a = t[3 * i][l], b = t[3 * i + 1][l], c = t[3 * i + 2][l];
          u[4 * i][l] = a;
          u[4 * i + 1][l] = 0.5f * (a + b + c);
          u[4 * i + 2][l] = 0.5f * (a - b + c);
          u[4 * i + 3][l] = c;
        }
      // Whole rows by fixed-size copies: a copy of n floats compiled to `rep movs`, whose start
      // cost more than the transform.
      for (int m = 0; m < 16; ++m)
        if (n == kFilters) std::memcpy(U + m * OC + o * g.C + c0, u[m], sizeof u[m]);
        else std::copy(u[m], u[m] + n, U + m * OC + o * g.C + c0);
    }
}

/** The input planes, zero-padded to [2 * tiles_h + 2, 2 * tiles_w + 2]: every tile reads
 *  4x4 values without bounds checks. */
void pad_planes(const Winograd3x3& g, const float* x, int64_t Hp, int64_t Wp, float* xp) {
  parallel_for(g.N * g.C, std::max<int64_t>(1, 16384 / (Hp * Wp)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* dst = xp + p * Hp * Wp;
      std::fill(dst, dst + Hp * Wp, 0.0f);
      for (int64_t h = 0; h < g.H; ++h)
        std::copy(x + (p * g.H + h) * g.W, x + (p * g.H + h + 1) * g.W, dst + (h + g.pad_h) * Wp + g.pad_w);
    }
  });
}

/** B^T down the columns of four input rows d [4, Wp] into r [4, Wp]. */
inline void down_columns(const float* __restrict d, int64_t Wp, float* __restrict r) {
  for (int64_t j = 0; j < Wp; ++j) {
    const float d0 = d[j], d1 = d[Wp + j], d2 = d[2 * Wp + j], d3 = d[3 * Wp + j];
    r[j] = d0 - d2;
    r[Wp + j] = d1 + d2;
    r[2 * Wp + j] = d2 - d1;
    r[3 * Wp + j] = d1 - d3;
  }
}

/** V[k][c][t] = (B^T d B)[k] for the tile rows [row0, row0 + rows) of one image's padded planes
 *  (V's rows ld floats apart), B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: first down the
 *  columns of each tile row's four input rows, then along them (loops over whole rows, which the
 *  compiler vectorises). */
UG_MULTIVERSION void transform_tiles(const float* planes, int64_t C, int64_t Hp, int64_t Wp, int64_t tiles_w,
                                     int64_t row0, int64_t rows, float* V, int64_t ld, float* r) {
  const int64_t k_stride = C * ld;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t ti = 0; ti < rows; ++ti) {
      down_columns(planes + (c * Hp + 2 * (row0 + ti)) * Wp, Wp, r);
      for (int i = 0; i < 4; ++i) {
        const float* __restrict ri = r + i * Wp;
        float* __restrict v = V + (i * 4) * k_stride + c * ld + ti * tiles_w;
        for (int64_t tj = 0; tj < tiles_w; ++tj) {
          const float e0 = ri[2 * tj], o0 = ri[2 * tj + 1], e1 = ri[2 * tj + 2], o1 = ri[2 * tj + 3];
          v[tj] = e0 - e1;
          v[k_stride + tj] = o0 + e1;
          v[2 * k_stride + tj] = e1 - o0;
          v[3 * k_stride + tj] = o0 - o1;
        }
      }
    }
}

/** One image's outputs y [O, Ho, Wo] for its tile rows [row0, row0 + rows) from the products
 *  M[k][o][t] (rows ld floats apart): A^T m A plus the bias, then the epilogue, A^T = [1 1 1 0; 0 1
 *  -1 -1]; tiles past the edge are cut. */
UG_MULTIVERSION void untransform_tiles(const Winograd3x3& g, const float* M, int64_t ld, int64_t tiles_w, int64_t row0,
                                       int64_t rows, const float* bias, float* y, float* s, Epilogue e) {
  const int64_t Ho = g.out_h(), Wo = g.out_w(), k_stride = g.O * ld;
  for (int64_t o = 0; o < g.O; ++o) {
    const float b = bias ? bias[o] : 0.0f;
    for (int64_t ti = 0; ti < rows; ++ti) {
      const float* m = M + o * ld + ti * tiles_w;
      for (int j = 0; j < 4; ++j) {  // s[i][j][tj]: A^T applied down the tile's columns
        float *s0 = s + j * tiles_w, *s1 = s + (4 + j) * tiles_w;
        const float *m0 = m + j * k_stride, *m1 = m + (4 + j) * k_stride, *m2 = m + (8 + j) * k_stride,
                    *m3 = m + (12 + j) * k_stride;
        for (int64_t tj = 0; tj < tiles_w; ++tj) {
          s0[tj] = m0[tj] + m1[tj] + m2[tj];
          s1[tj] = m1[tj] - m2[tj] - m3[tj];
        }
      }
      const int64_t oh = 2 * (row0 + ti);
      for (int i = 0; i < 2 && oh + i < Ho; ++i) {
        const float *a0 = s + 4 * i * tiles_w, *a1 = a0 + tiles_w, *a2 = a1 + tiles_w, *a3 = a2 + tiles_w;
        float* out = y + (o * Ho + oh + i) * Wo;
        // With an epilogue, the row is made in s past A^T's rows, then finished while both are
        // in cache: a pass after would read the whole output again. Plain loops, which the
        // compiler vectorises.
        const bool epilogue = e.accumulate || e.relu;
        float* row = epilogue ? s + 8 * tiles_w : out;
        for (int64_t tj = 0; tj < Wo / 2; ++tj) {
          row[2 * tj] = a0[tj] + a1[tj] + a2[tj] + b;
          row[2 * tj + 1] = a1[tj] - a2[tj] - a3[tj] + b;
        }
        if (Wo % 2) row[Wo - 1] = a0[Wo / 2] + a1[Wo / 2] + a2[Wo / 2] + b;
        if (e.accumulate)
          for (int64_t j = 0; j < Wo; ++j) row[j] += out[j];
        if (e.relu)
          for (int64_t j = 0; j < Wo; ++j) out[j] = ops::Relu::f(row[j]);
        else if (epilogue) std::copy(row, row + Wo, out);
      }
    }
  }
}

/** z[k * k_stride + t] = (A e A^T)[k] for the n tiles e of two gradient rows. */
inline void along_grad_row(const float* __restrict top, const float* __restrict bottom, int64_t n, int64_t k_stride,
                           float* __restrict z) {
  for (int64_t t = 0; t < n; ++t) {
    const float e00 = top[2 * t], e01 = top[2 * t + 1], e10 = bottom[2 * t], e11 = bottom[2 * t + 1];
    const float a0 = e00, a1 = e01, b0 = e00 + e10, b1 = e01 + e11, c0 = e00 - e10, c1 = e01 - e11;
    z[t] = a0;
    z[k_stride + t] = a0 + a1;
    z[2 * k_stride + t] = a0 - a1;
    z[3 * k_stride + t] = -a1;
    z[4 * k_stride + t] = b0;
    z[5 * k_stride + t] = b0 + b1;
    z[6 * k_stride + t] = b0 - b1;
    z[7 * k_stride + t] = -b1;
    z[8 * k_stride + t] = c0;
    z[9 * k_stride + t] = c0 + c1;
    z[10 * k_stride + t] = c0 - c1;
    z[11 * k_stride + t] = -c1;
    z[12 * k_stride + t] = -e10;
    z[13 * k_stride + t] = -e10 - e11;
    z[14 * k_stride + t] = e11 - e10;
    z[15 * k_stride + t] = e11;
  }
}

/** Z[k][o][t] (rows ld floats apart) = (A e A^T)[k] for the output gradient's 2x2 tiles e of one
 *  image's tile rows [row0, row0 + rows), A = [1 0; 1 1; 1 -1; 0 -1]; values past the edge read as
 *  zero (each tile row's two output rows are copied into e, 4 * tiles_w floats, zero-padded). */
UG_MULTIVERSION void transform_grad_tiles(const Winograd3x3& g, const float* gy, int64_t tiles_w, int64_t row0,
                                          int64_t rows, float* Z, int64_t ld, float* e) {
  const int64_t Ho = g.out_h(), Wo = g.out_w(), k_stride = g.O * ld;
  float *top = e, *bottom = e + 2 * tiles_w;
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t ti = 0; ti < rows; ++ti) {
      const int64_t oh = 2 * (row0 + ti);
      const float* src = gy + (o * Ho + oh) * Wo;
      std::fill(e, e + 4 * tiles_w, 0.0f);
      std::copy(src, src + Wo, top);
      if (oh + 1 < Ho) std::copy(src + Wo, src + 2 * Wo, bottom);
      along_grad_row(top, bottom, tiles_w, k_stride, Z + o * ld + ti * tiles_w);
    }
}

/** gw [O, C, 3, 3] = G^T S G for the summed products S [16][O][C], the adjoint of
 *  transform_filters. */
void untransform_filters(const Winograd3x3& g, const float* S, float* gw) {
  const int64_t OC = g.O * g.C;
  for (int64_t f0 = 0; f0 < OC; f0 += kFilters) {
    const int64_t n = std::min(kFilters, OC - f0);
    float s[16][kFilters], t[12][kFilters], out[9][kFilters];
    if (n < kFilters) std::memset(s, 0, sizeof s);
    for (int m = 0; m < 16; ++m)
      if (n == kFilters) std::memcpy(s[m], S + m * OC + f0, sizeof s[m]);
      else std::copy(S + m * OC + f0, S + m * OC + f0 + n, s[m]);
    for (int j = 0; j < 4; ++j)  // t [3][4] = G^T s, row i at t[4 * i]
      for (int64_t l = 0; l < kFilters; ++l) {
        const float s0 = s[j][l], s1 = s[4 + j][l], s2 = s[8 + j][l], s3 = s[12 + j][l];
        t[j][l] = s0 + 0.5f * (s1 + s2);
        t[4 + j][l] = 0.5f * (s1 - s2);
        t[8 + j][l] = 0.5f * (s1 + s2) + s3;
      }
    for (int i = 0; i < 3; ++i)
      for (int64_t l = 0; l < kFilters; ++l) {
        const float a = t[4 * i][l], b = t[4 * i + 1][l], c = t[4 * i + 2][l], d = t[4 * i + 3][l];
        out[3 * i][l] = a + 0.5f * (b + c);
        out[3 * i + 1][l] = 0.5f * (b - c);
        out[3 * i + 2][l] = 0.5f * (b + c) + d;
      }
    for (int64_t l = 0; l < n; ++l)
      for (int tap = 0; tap < 9; ++tap) gw[(f0 + l) * 9 + tap] = out[tap][l];
  }
}

/** The tiling of a convolution's outputs: whole tile rows in blocks of about block_floats;
 *  or where a whole image takes at most image_floats, whole images side by side, as many as
 *  fit (small planes' products are otherwise too narrow for OpenBLAS, whose packing of the
 *  filters then dominates: 256 channels on 14x14 at batch 2, forward 4.8 -> 4.2 ms). */
struct Tiling {
  int64_t tiles_h, tiles_w, Hp, Wp, rows, images = 1, blocks, total;
  Tiling(const Winograd3x3& g, int64_t block_floats, int64_t image_floats)
      : tiles_h((g.out_h() + 1) / 2), tiles_w((g.out_w() + 1) / 2), Hp(2 * tiles_h + 2), Wp(2 * tiles_w + 2) {
    const int64_t per_row = 16 * (g.C + g.O) * tiles_w;
    rows = std::clamp<int64_t>(block_floats / per_row, 1, tiles_h);
    if (per_row * tiles_h <= image_floats) {
      rows = tiles_h;
      images = std::clamp<int64_t>(image_floats / (per_row * tiles_h), 1, g.N);
    }
    blocks = (tiles_h + rows - 1) / rows;
    total = (g.N + images - 1) / images * blocks;
  }
  int64_t columns() const { return images * rows * tiles_w; }  // the most tiles a block has
  /** Block b: images [n0, n1), tile rows [row0, row0 + nrows) of each. */
  struct Block {
    int64_t n0, n1, row0, nrows;
    int64_t count(int64_t tiles_w) const { return (n1 - n0) * nrows * tiles_w; }
  };
  Block block(const Winograd3x3& g, int64_t b) const {
    const int64_t n0 = b / blocks * images, row0 = b % blocks * rows;
    return {n0, std::min(g.N, n0 + images), row0, std::min(rows, tiles_h - row0)};
  }
};

#undef UG_MULTIVERSION

}  // namespace

bool Winograd3x3::worthwhile() const {
  const int64_t tiles = N * ((out_h() + 1) / 2) * ((out_w() + 1) / 2);
  return C >= 16 && O >= 16 && tiles >= 96;
}

void winograd_transform_filters(int64_t O, int64_t C, const float* w, float* U) {
  transform_filters({1, C, 1, 1, O, 0, 0}, w, false, U);
}

void winograd_conv3x3(const Winograd3x3& g, const float* x, const float* w, bool transposed, const float* bias,
                      float* y, Epilogue epilogue, const float* filters) {
  const Tiling tl(g, kBlockFloats, kImageFloats);
  Scratch<float> filters_buf, planes_buf;
  const float* U = filters;
  if (!U) {
    float* made = filters_buf.get(16 * g.O * g.C);
    transform_filters(g, w, transposed, made);
    U = made;
  }
  float* xp = planes_buf.get(g.N * g.C * tl.Hp * tl.Wp);
  pad_planes(g, x, tl.Hp, tl.Wp, xp);
  parallel_for(tl.total, 1, [&](int64_t b0, int64_t b1) {
    Scratch<float> inputs_buf, products_buf, rows_buf;
    float* V = inputs_buf.get(16 * g.C * tl.columns());
    float* M = products_buf.get(16 * g.O * tl.columns());
    float* r = rows_buf.get(std::max(4 * tl.Wp, 10 * tl.tiles_w));  // untransform_tiles: 8 rows and an output row
    for (int64_t b = b0; b < b1; ++b) {
      const Tiling::Block bl = tl.block(g, b);
      const int64_t count = bl.count(tl.tiles_w), per_image = bl.nrows * tl.tiles_w;
      for (int64_t n = bl.n0; n < bl.n1; ++n)
        transform_tiles(xp + n * g.C * tl.Hp * tl.Wp, g.C, tl.Hp, tl.Wp, tl.tiles_w, bl.row0, bl.nrows,
                        V + (n - bl.n0) * per_image, count, r);
      for (int k = 0; k < 16; ++k)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.O, count, g.C, 1.0f, U + k * g.O * g.C, g.C,
                    V + k * g.C * count, count, 0.0f, M + k * g.O * count, count);
      for (int64_t n = bl.n0; n < bl.n1; ++n)
        untransform_tiles(g, M + (n - bl.n0) * per_image, count, tl.tiles_w, bl.row0, bl.nrows, bias,
                          y + n * g.O * g.out_h() * g.out_w(), r, epilogue);
    }
  });
}

void winograd_weight_grad3x3(const Winograd3x3& g, const float* x, const float* gy, float* gw) {
  const Tiling tl(g, kWeightGradBlockFloats, kImageFloats);
  const int64_t total = tl.total, size = 16 * g.O * g.C;
  // Runs of consecutive blocks (how many: fixed by the problem, fewer for large filters) sum
  // into their own products, added in order at the end: the same bits on any thread count.
  const int64_t runs = std::clamp<int64_t>((int64_t{1} << 22) / size, 1, std::min<int64_t>(total, 16));
  Scratch<float> planes_buf, sums_buf;
  float* xp = planes_buf.get(g.N * g.C * tl.Hp * tl.Wp);
  pad_planes(g, x, tl.Hp, tl.Wp, xp);
  float* S = sums_buf.get(runs * size);
  parallel_for(runs, 1, [&](int64_t r0, int64_t r1) {
    Scratch<float> inputs_buf, grads_buf, rows_buf;
    float* V = inputs_buf.get(16 * g.C * tl.columns());
    float* Z = grads_buf.get(16 * g.O * tl.columns());
    float* r = rows_buf.get(4 * tl.Wp);  // 4 * Wp >= 4 * tiles_w: also transform_grad_tiles' rows
    for (int64_t run = r0; run < r1; ++run)
      for (int64_t b = total * run / runs; b < total * (run + 1) / runs; ++b) {
        const Tiling::Block bl = tl.block(g, b);
        const int64_t count = bl.count(tl.tiles_w), per_image = bl.nrows * tl.tiles_w;
        for (int64_t n = bl.n0; n < bl.n1; ++n) {
          transform_tiles(xp + n * g.C * tl.Hp * tl.Wp, g.C, tl.Hp, tl.Wp, tl.tiles_w, bl.row0, bl.nrows,
                          V + (n - bl.n0) * per_image, count, r);
          transform_grad_tiles(g, gy + n * g.O * g.out_h() * g.out_w(), tl.tiles_w, bl.row0, bl.nrows,
                               Z + (n - bl.n0) * per_image, count, r);
        }
        const float beta = b == total * run / runs ? 0.0f : 1.0f;
        for (int k = 0; k < 16; ++k)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g.O, g.C, count, 1.0f, Z + k * g.O * count, count,
                      V + k * g.C * count, count, beta, S + run * size + k * g.O * g.C, g.C);
      }
  });
  for (int64_t run = 1; run < runs; ++run)
    for (int64_t i = 0; i < size; ++i) S[i] += S[run * size + i];
  untransform_filters(g, S, gw);
}

}  // namespace ug::cpu
