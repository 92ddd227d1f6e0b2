// F(2x2, 3x3): with B, G, A the transforms of Lavin & Gray's paper, a 4x4 input tile d and a
// filter g give the 2x2 outputs A^T [(G g G^T) . (B^T d B)] A. The 16 elementwise products,
// summed over input channels, are 16 matrix products U[k] [O, C] x V[k] [C, tiles]. Tiles are
// taken in blocks whose transformed inputs and products stay in cache; blocks run in parallel
// (OpenBLAS on the calling thread), and each output is computed by one block, so the bits do
// not depend on the thread count.
#include "ug/backend/cpu/cpu_winograd.h"

#include <cblas.h>

#include <algorithm>

#include "ug/backend/cpu/scratch.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

// The transformed inputs and the products of one block of tiles, 16 * (C + O) floats a tile,
// take about this many floats: the products are then read back from the L2 cache.
constexpr int64_t kBlockFloats = int64_t{1} << 19;

/** U [16][O][C] = G g G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. */
void transform_filters(const Winograd3x3& g, const float* w, bool transposed, float* U) {
  const int64_t OC = g.O * g.C;
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t c = 0; c < g.C; ++c) {
      float k[3][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          k[i][j] = transposed ? w[(c * g.O + o) * 9 + (2 - i) * 3 + (2 - j)] : w[(o * g.C + c) * 9 + i * 3 + j];
      float t[4][3];
      for (int j = 0; j < 3; ++j) {
        t[0][j] = k[0][j];
        t[1][j] = 0.5f * (k[0][j] + k[1][j] + k[2][j]);
        t[2][j] = 0.5f * (k[0][j] - k[1][j] + k[2][j]);
        t[3][j] = k[2][j];
      }
      float* u = U + o * g.C + c;
      for (int i = 0; i < 4; ++i) {
        u[(i * 4 + 0) * OC] = t[i][0];
        u[(i * 4 + 1) * OC] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        u[(i * 4 + 2) * OC] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        u[(i * 4 + 3) * OC] = t[i][2];
      }
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

/** V[k][c][t] = (B^T d B)[k] for the tile rows [row0, row0 + rows) of one image's padded
 *  planes, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: first down the columns of each tile
 *  row's four input rows, then along them (loops over whole rows, which the compiler vectorises). */
void transform_tiles(const float* planes, int64_t C, int64_t Hp, int64_t Wp, int64_t tiles_w, int64_t row0,
                     int64_t rows, float* V, float* r) {
  const int64_t count = rows * tiles_w, k_stride = C * count;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t ti = 0; ti < rows; ++ti) {
      const float* d = planes + (c * Hp + 2 * (row0 + ti)) * Wp;
      float *r0 = r, *r1 = r + Wp, *r2 = r + 2 * Wp, *r3 = r + 3 * Wp;
      for (int64_t j = 0; j < Wp; ++j) {
        const float d0 = d[j], d1 = d[Wp + j], d2 = d[2 * Wp + j], d3 = d[3 * Wp + j];
        r0[j] = d0 - d2;
        r1[j] = d1 + d2;
        r2[j] = d2 - d1;
        r3[j] = d1 - d3;
      }
      for (int i = 0; i < 4; ++i) {
        const float* ri = r + i * Wp;
        float* v = V + (i * 4) * k_stride + c * count + ti * tiles_w;
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
 *  M[k][o][t]: A^T m A plus the bias, A^T = [1 1 1 0; 0 1 -1 -1]; tiles past the edge are cut. */
void untransform_tiles(const Winograd3x3& g, const float* M, int64_t tiles_w, int64_t row0, int64_t rows,
                       const float* bias, float* y, float* s) {
  const int64_t Ho = g.out_h(), Wo = g.out_w(), count = rows * tiles_w, k_stride = g.O * count;
  for (int64_t o = 0; o < g.O; ++o) {
    const float b = bias ? bias[o] : 0.0f;
    for (int64_t ti = 0; ti < rows; ++ti) {
      const float* m = M + o * count + ti * tiles_w;
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
        for (int64_t tj = 0; tj < Wo / 2; ++tj) {
          out[2 * tj] = a0[tj] + a1[tj] + a2[tj] + b;
          out[2 * tj + 1] = a1[tj] - a2[tj] - a3[tj] + b;
        }
        if (Wo % 2) out[Wo - 1] = a0[Wo / 2] + a1[Wo / 2] + a2[Wo / 2] + b;
      }
    }
  }
}

}  // namespace

bool Winograd3x3::worthwhile() const {
  const int64_t tiles = N * ((out_h() + 1) / 2) * ((out_w() + 1) / 2);
  return C >= 16 && O >= 16 && tiles >= 128;
}

void winograd_conv3x3(const Winograd3x3& g, const float* x, const float* w, bool transposed, const float* bias,
                      float* y) {
  const int64_t Ho = g.out_h(), Wo = g.out_w(), tiles_h = (Ho + 1) / 2, tiles_w = (Wo + 1) / 2;
  const int64_t Hp = 2 * tiles_h + 2, Wp = 2 * tiles_w + 2;
  // Blocks of whole tile rows, of about kBlockFloats.
  const int64_t rows = std::clamp<int64_t>(kBlockFloats / (16 * (g.C + g.O) * tiles_w), 1, tiles_h);
  const int64_t blocks = (tiles_h + rows - 1) / rows;
  Scratch<float> filters_buf, planes_buf;
  float* U = filters_buf.get(16 * g.O * g.C);
  transform_filters(g, w, transposed, U);
  float* xp = planes_buf.get(g.N * g.C * Hp * Wp);
  pad_planes(g, x, Hp, Wp, xp);
  parallel_for(g.N * blocks, 1, [&](int64_t b0, int64_t b1) {
    Scratch<float> inputs_buf, products_buf, rows_buf;
    float* V = inputs_buf.get(16 * g.C * rows * tiles_w);
    float* M = products_buf.get(16 * g.O * rows * tiles_w);
    float* r = rows_buf.get(std::max(4 * Wp, 8 * tiles_w));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n = b / blocks, row0 = b % blocks * rows, nrows = std::min(rows, tiles_h - row0);
      const int64_t count = nrows * tiles_w;
      transform_tiles(xp + n * g.C * Hp * Wp, g.C, Hp, Wp, tiles_w, row0, nrows, V, r);
      for (int k = 0; k < 16; ++k)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.O, count, g.C, 1.0f, U + k * g.O * g.C, g.C,
                    V + k * g.C * count, count, 0.0f, M + k * g.O * count, count);
      untransform_tiles(g, M, tiles_w, row0, nrows, bias, y + n * g.O * Ho * Wo, r);
    }
  });
}

}  // namespace ug::cpu
