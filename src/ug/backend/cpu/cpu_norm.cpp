// Fused row normalizations. LayerNorm: the row statistics (two passes over a row, which stays
// in cache) and one pass to write y; the backward computes dx row by row and the weight and
// bias gradients in fixed blocks of rows summed in order, so results do not depend on the
// thread count. Softmax: max, exp and sum, and scale, per row. The loops are compiled twice,
// for x86-64 and AVX2+FMA (picked like the other kernels); exp vectorises through libmvec.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/backend/cpu/vector_math.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

constexpr int kLanes = 8;  // independent accumulators, so the compiler vectorises the sums

template <class T> struct NormArgs {
  const T* x;
  const T* w;  // null: no weight
  const T* b;  // null: no bias
  const T* g;
  T* y;  // y (forward) or dx (backward)
  T* mean;
  T* rstd;
  T* dw;  // per-block partial sums [blocks, cols] (backward)
  T* db;
  int64_t rows, cols, block_rows;
  T eps;
};

template <class T, class F> [[gnu::always_inline]] inline T row_sum(int64_t n, F f) {
  T acc[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += f(c + l);
  T s = 0;
  for (; c < n; ++c) s += f(c);
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

template <class T> [[gnu::always_inline]] inline void forward_rows(const NormArgs<T>& a, int64_t r0, int64_t r1) {
  const int64_t n = a.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const T* x = a.x + r * n;
    T* y = a.y + r * n;
    const T m = row_sum<T>(n, [&](int64_t c) { return x[c]; }) / static_cast<T>(n);
    const T var = row_sum<T>(n,
                             [&](int64_t c) {
                               T d = x[c] - m;
                               return d * d;
                             }) /
                  static_cast<T>(n);
    const T rs = T(1) / std::sqrt(var + a.eps);
    a.mean[r] = m;
    a.rstd[r] = rs;
    if (a.w && a.b)
      for (int64_t c = 0; c < n; ++c) y[c] = (x[c] - m) * rs * a.w[c] + a.b[c];
    else if (a.w)
      for (int64_t c = 0; c < n; ++c) y[c] = (x[c] - m) * rs * a.w[c];
    else if (a.b)
      for (int64_t c = 0; c < n; ++c) y[c] = (x[c] - m) * rs + a.b[c];
    else
      for (int64_t c = 0; c < n; ++c) y[c] = (x[c] - m) * rs;
  }
}

/** Rows of blocks [k0, k1): dx per row; the block's dw and db partial sums. */
template <class T> [[gnu::always_inline]] inline void backward_blocks(const NormArgs<T>& a, int64_t k0, int64_t k1) {
  const int64_t n = a.cols;
  for (int64_t k = k0; k < k1; ++k) {
    T* dw = a.dw ? a.dw + k * n : nullptr;
    T* db = a.db ? a.db + k * n : nullptr;
    if (dw) std::fill(dw, dw + n, T(0));
    if (db) std::fill(db, db + n, T(0));
    const int64_t r_end = std::min(a.rows, (k + 1) * a.block_rows);
    for (int64_t r = k * a.block_rows; r < r_end; ++r) {
      const T* x = a.x + r * n;
      const T* g = a.g + r * n;
      T* dx = a.y + r * n;
      const T m = a.mean[r], rs = a.rstd[r];
      // dx = rs * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w.
      T s1, s2;
      if (a.w) {
        s1 = row_sum<T>(n, [&](int64_t c) { return g[c] * a.w[c]; });
        s2 = row_sum<T>(n, [&](int64_t c) { return g[c] * a.w[c] * (x[c] - m); });
      } else {
        s1 = row_sum<T>(n, [&](int64_t c) { return g[c]; });
        s2 = row_sum<T>(n, [&](int64_t c) { return g[c] * (x[c] - m); });
      }
      const T inv_n = T(1) / static_cast<T>(n);
      const T mean_gw = s1 * inv_n, mean_gwx = s2 * rs * inv_n;
      if (a.w)
        for (int64_t c = 0; c < n; ++c) {
          const T xhat = (x[c] - m) * rs;
          dx[c] = rs * (g[c] * a.w[c] - mean_gw - xhat * mean_gwx);
        }
      else
        for (int64_t c = 0; c < n; ++c) {
          const T xhat = (x[c] - m) * rs;
          dx[c] = rs * (g[c] - mean_gw - xhat * mean_gwx);
        }
      if (dw)
        for (int64_t c = 0; c < n; ++c) dw[c] += g[c] * (x[c] - m) * rs;
      if (db)
        for (int64_t c = 0; c < n; ++c) db[c] += g[c];
    }
  }
}

template <class T>
[[gnu::always_inline]] inline void softmax_rows(const T* x, T* y, int64_t n, bool log, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    T acc[kLanes];
    for (int l = 0; l < kLanes; ++l) acc[l] = xr[0];
    int64_t c = 0;
    for (; c + kLanes <= n; c += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] = xr[c + l] > acc[l] ? xr[c + l] : acc[l];
    T m = acc[0];
    for (int l = 1; l < kLanes; ++l) m = acc[l] > m ? acc[l] : m;
    for (; c < n; ++c) m = xr[c] > m ? xr[c] : m;
    for (c = 0; c < n; ++c) yr[c] = std::exp(xr[c] - m);
    const T s = row_sum<T>(n, [&](int64_t c) { return yr[c]; });
    if (log) {
      const T ls = std::log(s);  // (x - m) - log(s): m + log(s) would round away log(s) for large m
      for (c = 0; c < n; ++c) yr[c] = (xr[c] - m) - ls;
    } else {
      const T inv = T(1) / s;
      for (c = 0; c < n; ++c) yr[c] *= inv;
    }
  }
}

/** softmax: dx = y (g - sum(g y)); log_softmax: dx = g - exp(y) sum(g). */
template <class T>
[[gnu::always_inline]] inline void softmax_backward_rows(const T* g, const T* y, T* dx, int64_t n, bool log, int64_t r0,
                                                         int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* gr = g + r * n;
    const T* yr = y + r * n;
    T* dr = dx + r * n;
    if (log) {
      const T s = row_sum<T>(n, [&](int64_t c) { return gr[c]; });
      for (int64_t c = 0; c < n; ++c) dr[c] = gr[c] - std::exp(yr[c]) * s;
    } else {
      const T s = row_sum<T>(n, [&](int64_t c) { return gr[c] * yr[c]; });
      for (int64_t c = 0; c < n; ++c) dr[c] = yr[c] * (gr[c] - s);
    }
  }
}

#define UG_NORM_VARIANTS(T, suffix)                                                                                    \
  void forward_generic_##suffix(const NormArgs<T>& a, int64_t r0, int64_t r1) { forward_rows(a, r0, r1); }             \
  [[gnu::target("avx2,fma")]] void forward_avx2_##suffix(const NormArgs<T>& a, int64_t r0, int64_t r1) {               \
    forward_rows(a, r0, r1);                                                                                           \
  }                                                                                                                    \
  void backward_generic_##suffix(const NormArgs<T>& a, int64_t k0, int64_t k1) { backward_blocks(a, k0, k1); }         \
  [[gnu::target("avx2,fma")]] void backward_avx2_##suffix(const NormArgs<T>& a, int64_t k0, int64_t k1) {              \
    backward_blocks(a, k0, k1);                                                                                        \
  }                                                                                                                    \
  void softmax_generic_##suffix(const T* x, T* y, int64_t n, bool log, int64_t r0, int64_t r1) {                       \
    softmax_rows(x, y, n, log, r0, r1);                                                                                \
  }                                                                                                                    \
  [[gnu::target("avx2,fma")]] void softmax_avx2_##suffix(const T* x, T* y, int64_t n, bool log, int64_t r0,            \
                                                         int64_t r1) {                                                 \
    softmax_rows(x, y, n, log, r0, r1);                                                                                \
  }                                                                                                                    \
  void softmax_backward_generic_##suffix(const T* g, const T* y, T* dx, int64_t n, bool log, int64_t r0, int64_t r1) { \
    softmax_backward_rows(g, y, dx, n, log, r0, r1);                                                                   \
  }                                                                                                                    \
  [[gnu::target("avx2,fma")]] void softmax_backward_avx2_##suffix(const T* g, const T* y, T* dx, int64_t n, bool log,  \
                                                                  int64_t r0, int64_t r1) {                            \
    softmax_backward_rows(g, y, dx, n, log, r0, r1);                                                                   \
  }
UG_NORM_VARIANTS(float, f32)
UG_NORM_VARIANTS(double, f64)
#undef UG_NORM_VARIANTS

void forward_rows_isa(bool avx2, const NormArgs<float>& a, int64_t r0, int64_t r1) {
  avx2 ? forward_avx2_f32(a, r0, r1) : forward_generic_f32(a, r0, r1);
}
void forward_rows_isa(bool avx2, const NormArgs<double>& a, int64_t r0, int64_t r1) {
  avx2 ? forward_avx2_f64(a, r0, r1) : forward_generic_f64(a, r0, r1);
}
void backward_blocks_isa(bool avx2, const NormArgs<float>& a, int64_t k0, int64_t k1) {
  avx2 ? backward_avx2_f32(a, k0, k1) : backward_generic_f32(a, k0, k1);
}
void backward_blocks_isa(bool avx2, const NormArgs<double>& a, int64_t k0, int64_t k1) {
  avx2 ? backward_avx2_f64(a, k0, k1) : backward_generic_f64(a, k0, k1);
}

void softmax_isa(bool avx2, const float* x, float* y, int64_t n, bool log, int64_t r0, int64_t r1) {
  avx2 ? softmax_avx2_f32(x, y, n, log, r0, r1) : softmax_generic_f32(x, y, n, log, r0, r1);
}
void softmax_isa(bool avx2, const double* x, double* y, int64_t n, bool log, int64_t r0, int64_t r1) {
  avx2 ? softmax_avx2_f64(x, y, n, log, r0, r1) : softmax_generic_f64(x, y, n, log, r0, r1);
}
void softmax_backward_isa(bool avx2, const float* g, const float* y, float* dx, int64_t n, bool log, int64_t r0,
                          int64_t r1) {
  avx2 ? softmax_backward_avx2_f32(g, y, dx, n, log, r0, r1) : softmax_backward_generic_f32(g, y, dx, n, log, r0, r1);
}
void softmax_backward_isa(bool avx2, const double* g, const double* y, double* dx, int64_t n, bool log, int64_t r0,
                          int64_t r1) {
  avx2 ? softmax_backward_avx2_f64(g, y, dx, n, log, r0, r1) : softmax_backward_generic_f64(g, y, dx, n, log, r0, r1);
}

template <class T> const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr;
}

/** Rows per parallel piece: about 16K elements, at least one row. */
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

template <class T>
void layer_norm_impl(bool avx2, const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y,
                     const Tensor& mean, const Tensor& rstd) {
  NormArgs<T> a{};
  a.x = static_cast<const T*>(x.raw_data());
  a.w = ptr_or_null<T>(w);
  a.b = ptr_or_null<T>(b);
  a.y = static_cast<T*>(y.raw_data());
  a.mean = static_cast<T*>(mean.raw_data());
  a.rstd = static_cast<T*>(rstd.raw_data());
  a.rows = x.size(0);
  a.cols = x.size(1);
  a.eps = static_cast<T>(eps);
  parallel_for(a.rows, row_grain(a.cols), [&](int64_t r0, int64_t r1) { forward_rows_isa(avx2, a, r0, r1); });
}

template <class T>
void layer_norm_backward_impl(bool avx2, const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                              const Tensor& w, const Tensor& dx, const Tensor& dw, const Tensor& db) {
  NormArgs<T> a{};
  a.x = static_cast<const T*>(x.raw_data());
  a.g = static_cast<const T*>(g.raw_data());
  a.w = ptr_or_null<T>(w);
  a.y = static_cast<T*>(dx.raw_data());
  a.mean = static_cast<T*>(mean.raw_data());
  a.rstd = static_cast<T*>(rstd.raw_data());
  a.rows = x.size(0);
  a.cols = x.size(1);
  // At most 32 blocks of at least 64 rows: the partial sums stay small.
  a.block_rows = std::max<int64_t>(64, (a.rows + 31) / 32);
  const int64_t blocks = (a.rows + a.block_rows - 1) / a.block_rows;
  std::vector<T> dw_part(dw.defined() ? static_cast<size_t>(blocks * a.cols) : 0);
  std::vector<T> db_part(db.defined() ? static_cast<size_t>(blocks * a.cols) : 0);
  a.dw = dw.defined() ? dw_part.data() : nullptr;
  a.db = db.defined() ? db_part.data() : nullptr;
  const int64_t grain = std::max<int64_t>(1, row_grain(a.cols) / a.block_rows);
  parallel_for(blocks, grain, [&](int64_t k0, int64_t k1) { backward_blocks_isa(avx2, a, k0, k1); });
  auto total = [&](const std::vector<T>& part, const Tensor& out) {
    T* o = static_cast<T*>(out.raw_data());
    std::fill(o, o + a.cols, T(0));
    for (int64_t k = 0; k < blocks; ++k)
      for (int64_t c = 0; c < a.cols; ++c) o[c] += part[static_cast<size_t>(k * a.cols + c)];
  };
  if (dw.defined()) total(dw_part, dw);
  if (db.defined()) total(db_part, db);
}

template <class T> void softmax_impl(bool avx2, const Tensor& x, bool log, const Tensor& y) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  const int64_t n = x.size(1);
  parallel_for(x.size(0), row_grain(n), [&](int64_t r0, int64_t r1) { softmax_isa(avx2, px, py, n, log, r0, r1); });
}

template <class T> void softmax_backward_impl(bool avx2, const Tensor& g, const Tensor& y, bool log, const Tensor& dx) {
  const T* pg = static_cast<const T*>(g.raw_data());
  const T* py = static_cast<const T*>(y.raw_data());
  T* pd = static_cast<T*>(dx.raw_data());
  const int64_t n = y.size(1);
  parallel_for(y.size(0), row_grain(n),
               [&](int64_t r0, int64_t r1) { softmax_backward_isa(avx2, pg, py, pd, n, log, r0, r1); });
}

}  // namespace

void CpuBackend::softmax(const Tensor& x, bool log, const Tensor& y) {
  if (x.numel() == 0) return;
  if (x.dtype() == DType::Float64) return softmax_impl<double>(isa_ != Isa::Generic, x, log, y);
  softmax_impl<float>(isa_ != Isa::Generic, x, log, y);
}

void CpuBackend::softmax_backward(const Tensor& g, const Tensor& y, bool log, const Tensor& dx) {
  if (y.numel() == 0) return;
  if (y.dtype() == DType::Float64) return softmax_backward_impl<double>(isa_ != Isa::Generic, g, y, log, dx);
  softmax_backward_impl<float>(isa_ != Isa::Generic, g, y, log, dx);
}

void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                            const Tensor& mean, const Tensor& rstd) {
  if (x.numel() == 0) return;
  if (x.dtype() == DType::Float64)
    return layer_norm_impl<double>(isa_ != Isa::Generic, x, weight, bias, eps, y, mean, rstd);
  layer_norm_impl<float>(isa_ != Isa::Generic, x, weight, bias, eps, y, mean, rstd);
}

void CpuBackend::layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& weight, const Tensor& dx, const Tensor& dweight,
                                     const Tensor& dbias) {
  if (x.dtype() == DType::Float64)
    return layer_norm_backward_impl<double>(isa_ != Isa::Generic, g, x, mean, rstd, weight, dx, dweight, dbias);
  layer_norm_backward_impl<float>(isa_ != Isa::Generic, g, x, mean, rstd, weight, dx, dweight, dbias);
}

}  // namespace ug::cpu
