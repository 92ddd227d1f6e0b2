// 2-d pooling kernels over planes [P, H, W], one plane per task. Windows come precomputed
// (ug/ops/pool.h), so max, average and adaptive pooling share these loops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

/** The positions of window i along dim d that lie inside [0, size), as first + j * step for
 *  j < n. */
struct Span {
  int64_t first, n;
};

/** The spans of every window along dim d, computed once per call (divisions are slow). */
std::vector<Span> spans(const PoolWindows& win, int d, int64_t size) {
  std::vector<Span> out;
  for (int64_t i = 0; i < win.out_size(d); ++i) {
    const int64_t step = win.step[d], start = win.start[d][i], count = win.count[d][i];
    const int64_t j0 = start >= 0 ? 0 : (-start + step - 1) / step;
    const int64_t j1 = std::min(count, start < size ? (size - start + step - 1) / step : 0);
    out.push_back({start + j0 * step, std::max<int64_t>(j1 - j0, 0)});
  }
  return out;
}

/** divisor[0][i] * divisor[1][j] for every output (i, j). */
std::vector<double> divisors(const PoolWindows& win) {
  std::vector<double> out;
  for (double a : win.divisor[0])
    for (double b : win.divisor[1]) out.push_back(a * b);
  return out;
}

int64_t plane_grain(int64_t plane_work) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(plane_work, 1)); }

/** The maximum of x over rows rs and columns cs (steps sh, sw) and its position. F > 0: the
 *  window is known to be F x F with unit steps, so the loops unroll. As torch: the first
 *  position wins ties, the last NaN wins over everything. The comparison feeds selects, not
 *  branches (maxima are unpredictable); NaNs, which compare false, are looked for in a second
 *  pass only when the window has one. */
template <int F, class T>
void window_max(const T* x, int64_t W, Span rs, Span cs, int64_t sh, int64_t sw, T& out, int64_t* index) {
  const int64_t na = F ? F : rs.n, nb = F ? F : cs.n, step_h = F ? 1 : sh, step_w = F ? 1 : sw;
  int64_t best = rs.first * W + cs.first;
  T val = -std::numeric_limits<T>::infinity();
  bool nan = false;
  for (int64_t a = 0; a < na; ++a)
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t at = (rs.first + a * step_h) * W + cs.first + b * step_w;
      const T v = x[at];
      const int64_t take = -static_cast<int64_t>(v > val);  // all ones or zero: no branch
      best += (at - best) & take;
      val = v > val ? v : val;  // maxss
      nan |= v != v;
    }
  if (nan)
    for (int64_t a = 0; a < na; ++a)
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t at = (rs.first + a * step_h) * W + cs.first + b * step_w;
        if (std::isnan(x[at])) {
          val = x[at];
          best = at;
        }
      }
  out = val;
  if (index) *index = best;
}

/** y[i] = the maximum over taps b < n of src[i * S + b * tap] for i < m (no NaN among them). */
template <int S, class T> void strided_max(const T* src, int64_t n, int64_t tap, int64_t m, T* y) {
  T* __restrict out = y;
  const T* __restrict first = src;
  for (int64_t i = 0; i < m; ++i) out[i] = first[i * S];
  for (int64_t b = 1; b < n; ++b) {
    const T* __restrict in = src + b * tap;
    for (int64_t i = 0; i < m; ++i) out[i] = std::max(out[i], in[i * S]);
  }
}

/** max_pool_row without the positions (no gradient will read them): the same passes, less
 *  the bookkeeping of where each maximum came from. */
template <class T>
bool max_pool_row_values(const T* x, int64_t W, Span rs, const std::vector<Span>& cols, int64_t sh, int64_t sw,
                         T* col_max, T* y) {
  T* __restrict cmax = col_max;
  const T* __restrict first = x + rs.first * W;
  int32_t nan = 0;
  for (int64_t w = 0; w < W; ++w) {
    cmax[w] = first[w];
    nan |= -static_cast<int32_t>(first[w] != first[w]);
  }
  for (int64_t a = 1; a < rs.n; ++a) {
    const T* __restrict row = x + (rs.first + a * sh) * W;
    for (int64_t w = 0; w < W; ++w) {
      const T v = row[w];
      cmax[w] = std::max(cmax[w], v);
      nan |= -static_cast<int32_t>(v != v);
    }
  }
  if (nan) return false;
  const int64_t Wo = static_cast<int64_t>(cols.size());
  for (int64_t ow = 0; ow < Wo;) {
    const Span cs = cols[ow];
    if (cs.n == 0) return false;
    // A run of windows of one width at a regular step (all but the edges ones): a loop over
    // the run per tap, which vectorises for steps 1 and 2.
    const int64_t step = ow + 1 < Wo ? cols[ow + 1].first - cs.first : 0;
    int64_t end = ow + 1;
    while (end < Wo && cols[end].n == cs.n && cols[end].first - cols[end - 1].first == step) ++end;
    if (end - ow >= 8 && (step == 1 || step == 2)) {
      if (step == 1) strided_max<1>(col_max + cs.first, cs.n, sw, end - ow, y + ow);
      else strided_max<2>(col_max + cs.first, cs.n, sw, end - ow, y + ow);
      ow = end;
      continue;
    }
    T val = col_max[cs.first];
    for (int64_t b = 1; b < cs.n; ++b) val = std::max(val, col_max[cs.first + b * sw]);
    y[ow++] = val;
  }
  return true;
}

/** The maxima of one output row oh of a plane, separably: first the maximum of each input
 *  column over the window's rows (a vectorised pass over whole rows), then of those over each
 *  window's columns. The first position wins ties as in window_max: a column keeps its first
 *  maximal row, and among columns the smallest flat index wins. Returns false, leaving the row
 *  to window_max, when the rows hold a NaN. */
template <class T>
bool max_pool_row(const T* x, int64_t W, Span rs, const std::vector<Span>& cols, int64_t sh, int64_t sw, T* col_max,
                  int32_t* col_row, T* y, int64_t* idx) {
  if (rs.n == 0) return false;
  if (!idx) return max_pool_row_values(x, W, rs, cols, sh, sw, col_max, y);
  // Restrict-qualified, so that the passes over a row vectorise.
  T* __restrict cmax = col_max;
  int32_t* __restrict crow = col_row;
  const T* __restrict first = x + rs.first * W;
  int32_t nan = 0;
  for (int64_t w = 0; w < W; ++w) {
    cmax[w] = first[w];
    crow[w] = static_cast<int32_t>(rs.first);
    nan |= -static_cast<int32_t>(first[w] != first[w]);
  }
  for (int64_t a = 1; a < rs.n; ++a) {
    const int32_t h = static_cast<int32_t>(rs.first + a * sh);
    const T* __restrict row = x + h * W;
    for (int64_t w = 0; w < W; ++w) {
      const T v = row[w], m = cmax[w];
      const int32_t take = -static_cast<int32_t>(v > m);  // masks, not branches: GCC vectorises these
      cmax[w] = std::max(m, v);
      crow[w] += (h - crow[w]) & take;
      nan |= -static_cast<int32_t>(v != v);
    }
  }
  if (nan) return false;
  for (size_t ow = 0; ow < cols.size(); ++ow) {
    const Span cs = cols[ow];
    if (cs.n == 0) return false;
    T val = col_max[cs.first];
    int64_t best = col_row[cs.first] * W + cs.first;
    for (int64_t b = 1; b < cs.n; ++b) {
      const int64_t w = cs.first + b * sw, at = col_row[w] * W + w;
      const T v = col_max[w];
      const int64_t take = -static_cast<int64_t>((v > val) | ((v == val) & (at < best)));  // no branch
      best += (at - best) & take;
      val = std::max(val, v);
    }
    y[ow] = val;
    idx[ow] = best;
  }
  return true;
}

// max_pool_row compiled twice, for x86-64 and for AVX2 (twice the width in its passes over
// whole rows); max and the selects are exact, so both give the same bits.
#define UG_POOL_ROW_VARIANTS(T, suffix)                                                                               \
  bool row_generic_##suffix(const T* x, int64_t W, Span rs, const std::vector<Span>& cols, int64_t sh, int64_t sw,    \
                            T* cm, int32_t* cr, T* y, int64_t* idx) {                                                 \
    return max_pool_row(x, W, rs, cols, sh, sw, cm, cr, y, idx);                                                      \
  }                                                                                                                   \
  [[gnu::target("avx2"), gnu::flatten]] bool row_avx2_##suffix(const T* x, int64_t W, Span rs,                        \
                                                               const std::vector<Span>& cols, int64_t sh, int64_t sw, \
                                                               T* cm, int32_t* cr, T* y, int64_t* idx) {              \
    return max_pool_row(x, W, rs, cols, sh, sw, cm, cr, y, idx);                                                      \
  }                                                                                                                   \
  bool row_isa(bool avx2, const T* x, int64_t W, Span rs, const std::vector<Span>& cols, int64_t sh, int64_t sw,      \
               T* cm, int32_t* cr, T* y, int64_t* idx) {                                                              \
    return avx2 ? row_avx2_##suffix(x, W, rs, cols, sh, sw, cm, cr, y, idx)                                           \
                : row_generic_##suffix(x, W, rs, cols, sh, sw, cm, cr, y, idx);                                       \
  }
UG_POOL_ROW_VARIANTS(float, f32)
UG_POOL_ROW_VARIANTS(double, f64)
#undef UG_POOL_ROW_VARIANTS

template <int F, class T>
void max_pool_planes(bool avx2, const T* x, int64_t P, int64_t H, int64_t W, const std::vector<Span>& rows,
                     const std::vector<Span>& cols, int64_t sh, int64_t sw, T* y, int64_t* idx) {
  const int64_t Ho = static_cast<int64_t>(rows.size()), Wo = static_cast<int64_t>(cols.size());
  parallel_for(P, plane_grain(H * W), [&](int64_t p0, int64_t p1) {
    std::vector<T> col_max(F ? 0 : W);
    std::vector<int32_t> col_row(F ? 0 : W);
    for (int64_t pl = p0; pl < p1; ++pl)
      for (int64_t oh = 0; oh < Ho; ++oh) {
        const int64_t o = (pl * Ho + oh) * Wo;
        // Unrolled 2x2 windows are as fast as the separable pass; wider ones are not.
        if (!F && row_isa(avx2, x + pl * H * W, W, rows[oh], cols, sh, sw, col_max.data(), col_row.data(), y + o,
                          idx ? idx + o : nullptr))
          continue;
        for (int64_t ow = 0; ow < Wo; ++ow)
          window_max<F>(x + pl * H * W, W, rows[oh], cols[ow], sh, sw, y[o + ow], idx ? idx + o + ow : nullptr);
      }
  });
}

template <class T>
void max_pool(bool avx2, const Tensor& xt, const PoolWindows& win, const Tensor& yt, const Tensor& it) {
  const int64_t P = xt.size(0), H = xt.size(1), W = xt.size(2);
  const T* x = static_cast<const T*>(xt.raw_data());
  T* y = static_cast<T*>(yt.raw_data());
  int64_t* idx = it.defined() ? static_cast<int64_t*>(it.raw_data()) : nullptr;
  const std::vector<Span> rows = spans(win, 0, H), cols = spans(win, 1, W);
  // 2x2 windows inside the input (max_pool2d(x, 2) and the like) get unrolled loops.
  bool two = win.step[0] == 1 && win.step[1] == 1;
  for (const auto* v : {&rows, &cols})
    for (const Span& sp : *v) two &= sp.n == 2;
  if (two) max_pool_planes<2>(avx2, x, P, H, W, rows, cols, 1, 1, y, idx);
  else max_pool_planes<0>(avx2, x, P, H, W, rows, cols, win.step[0], win.step[1], y, idx);
}

template <class T> void avg_pool(const Tensor& xt, const PoolWindows& win, const Tensor& yt) {
  const int64_t P = xt.size(0), H = xt.size(1), W = xt.size(2), Ho = yt.size(1), Wo = yt.size(2);
  const T* x = static_cast<const T*>(xt.raw_data());
  T* y = static_cast<T*>(yt.raw_data());
  const std::vector<Span> rows = spans(win, 0, H), cols = spans(win, 1, W);
  const std::vector<double> div = divisors(win);
  parallel_for(P, plane_grain(H * W), [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      const T* xp = x + pl * H * W;
      for (int64_t oh = 0; oh < Ho; ++oh) {
        const Span rs = rows[oh];
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const Span cs = cols[ow];
          T sum = 0;
          for (int64_t a = 0; a < rs.n; ++a) {
            const T* row = xp + (rs.first + a * win.step[0]) * W + cs.first;
            for (int64_t b = 0; b < cs.n; ++b) sum += row[b * win.step[1]];
          }
          y[(pl * Ho + oh) * Wo + ow] = static_cast<T>(sum / div[oh * Wo + ow]);
        }
      }
    }
  });
}

template <class T> void avg_pool_transpose(const Tensor& gt, const PoolWindows& win, const Tensor& gxt) {
  const int64_t P = gxt.size(0), H = gxt.size(1), W = gxt.size(2), Ho = gt.size(1), Wo = gt.size(2);
  const T* g = static_cast<const T*>(gt.raw_data());
  T* gx = static_cast<T*>(gxt.raw_data());
  const std::vector<Span> rows = spans(win, 0, H), cols = spans(win, 1, W);
  const std::vector<double> div = divisors(win);
  parallel_for(P, plane_grain(H * W), [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      T* xp = gx + pl * H * W;
      std::fill(xp, xp + H * W, T(0));
      for (int64_t oh = 0; oh < Ho; ++oh) {
        const Span rs = rows[oh];
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const Span cs = cols[ow];
          const T v = static_cast<T>(g[(pl * Ho + oh) * Wo + ow] / div[oh * Wo + ow]);
          for (int64_t a = 0; a < rs.n; ++a) {
            T* row = xp + (rs.first + a * win.step[0]) * W + cs.first;
            for (int64_t b = 0; b < cs.n; ++b) row[b * win.step[1]] += v;
          }
        }
      }
    }
  });
}

}  // namespace

void CpuBackend::max_pool2d(const Tensor& x, const PoolWindows& win, const Tensor& out, const Tensor& indices) {
  if (out.numel() == 0) return;
  dispatch_float_or_double(x.dtype(), "max_pool2d",
                           [&](auto t) { max_pool<decltype(t)>(isa_ != Isa::Generic, x, win, out, indices); });
}

void CpuBackend::avg_pool2d(const Tensor& x, const PoolWindows& win, const Tensor& out) {
  if (out.numel() == 0) return;
  dispatch_float_or_double(x.dtype(), "avg_pool2d", [&](auto t) { avg_pool<decltype(t)>(x, win, out); });
}

void CpuBackend::avg_pool2d_transpose(const Tensor& g, const PoolWindows& win, const Tensor& gx) {
  if (gx.numel() == 0) return;
  dispatch_float_or_double(gx.dtype(), "avg_pool2d", [&](auto t) { avg_pool_transpose<decltype(t)>(g, win, gx); });
}

}  // namespace ug::cpu
