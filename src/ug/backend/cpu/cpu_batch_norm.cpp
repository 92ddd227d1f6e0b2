// Fused batch normalization with batch statistics over x [N, C, S], one channel at a time: a
// channel's N planes of S elements (100 KB for ResNet's 64x112x112 at batch 2) stay in the L2
// cache between the passes. Forward: the mean, then the variance about it (two passes, not
// E[x^2] - mean^2, which cancels), then y. Backward: sum(g) and sum(g (x - mean)), then dx.
// Each channel's sums run in one fixed order whatever the thread count. The loops are compiled
// for x86-64 and AVX2+FMA, picked like the other kernels.
#include <cmath>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

constexpr int kLanes = 16;  // independent accumulators, so the compiler vectorises the sums

template <class T> struct BatchNormArgs {
  const T* x;
  const T* g;  // backward only
  const T* w;  // null: no weight
  const T* b;  // null: no bias
  T* y;        // y (forward) or dx (backward; null: not wanted)
  T* mean;
  T* var;
  T* dw;  // backward, null: not wanted
  T* db;
  int64_t n, c, s;
  T eps;
};

/** The sum of f(p, i) over the channel's planes p (pointer offset of plane start) and i in [0, S). */
template <class T, class F> [[gnu::always_inline]] inline T channel_sum(const BatchNormArgs<T>& a, int64_t ch, F f) {
  T acc[kLanes] = {};
  T tail = 0;
  for (int64_t n = 0; n < a.n; ++n) {
    const int64_t p = (n * a.c + ch) * a.s;
    int64_t i = 0;
    for (; i + kLanes <= a.s; i += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += f(p + i + l);
    for (; i < a.s; ++i) tail += f(p + i);
  }
  for (int l = 0; l < kLanes; ++l) tail += acc[l];
  return tail;
}

template <class T>
[[gnu::always_inline]] inline void forward_channels(const BatchNormArgs<T>& a, int64_t c0, int64_t c1) {
  const T count = static_cast<T>(a.n * a.s);
  for (int64_t ch = c0; ch < c1; ++ch) {
    const T* x = a.x;
    const T m = channel_sum(a, ch, [&](int64_t i) { return x[i]; }) / count;
    const T v = channel_sum(a, ch,
                            [&](int64_t i) {
                              const T d = x[i] - m;
                              return d * d;
                            }) /
                count;
    const T rs = T(1) / std::sqrt(v + a.eps);
    const T scale = a.w ? a.w[ch] * rs : rs, shift = a.b ? a.b[ch] : T(0);
    a.mean[ch] = m;
    a.var[ch] = v;
    for (int64_t n = 0; n < a.n; ++n) {
      const int64_t p = (n * a.c + ch) * a.s;
      const T* xp = x + p;
      T* yp = a.y + p;
      for (int64_t i = 0; i < a.s; ++i) yp[i] = (xp[i] - m) * scale + shift;
    }
  }
}

/** dx = w rs (g - mean(g) - (x - m) rs^2 mean(g (x - m))), dw = rs sum(g (x - m)), db = sum(g). */
template <class T>
[[gnu::always_inline]] inline void backward_channels(const BatchNormArgs<T>& a, int64_t c0, int64_t c1) {
  const T count = static_cast<T>(a.n * a.s);
  for (int64_t ch = c0; ch < c1; ++ch) {
    const T *x = a.x, *g = a.g;
    const T m = a.mean[ch], rs = T(1) / std::sqrt(a.var[ch] + a.eps);
    const T sg = channel_sum(a, ch, [&](int64_t i) { return g[i]; });
    const T sgx = channel_sum(a, ch, [&](int64_t i) { return g[i] * (x[i] - m); });
    if (a.dw) a.dw[ch] = sgx * rs;
    if (a.db) a.db[ch] = sg;
    if (!a.y) continue;
    const T k = a.w ? a.w[ch] * rs : rs, mg = sg / count, cx = sgx * rs * rs / count;
    for (int64_t n = 0; n < a.n; ++n) {
      const int64_t p = (n * a.c + ch) * a.s;
      const T *xp = x + p, *gp = g + p;
      T* dp = a.y + p;
      for (int64_t i = 0; i < a.s; ++i) dp[i] = k * (gp[i] - mg - (xp[i] - m) * cx);
    }
  }
}

#define UG_BATCH_NORM_VARIANTS(T, suffix)                                                                             \
  void forward_generic_##suffix(const BatchNormArgs<T>& a, int64_t c0, int64_t c1) { forward_channels(a, c0, c1); }   \
  [[gnu::target("avx2,fma")]] void forward_avx2_##suffix(const BatchNormArgs<T>& a, int64_t c0, int64_t c1) {         \
    forward_channels(a, c0, c1);                                                                                      \
  }                                                                                                                   \
  void backward_generic_##suffix(const BatchNormArgs<T>& a, int64_t c0, int64_t c1) { backward_channels(a, c0, c1); } \
  [[gnu::target("avx2,fma")]] void backward_avx2_##suffix(const BatchNormArgs<T>& a, int64_t c0, int64_t c1) {        \
    backward_channels(a, c0, c1);                                                                                     \
  }
UG_BATCH_NORM_VARIANTS(float, f32)
UG_BATCH_NORM_VARIANTS(double, f64)
#undef UG_BATCH_NORM_VARIANTS

void forward_isa(bool avx2, const BatchNormArgs<float>& a, int64_t c0, int64_t c1) {
  avx2 ? forward_avx2_f32(a, c0, c1) : forward_generic_f32(a, c0, c1);
}
void forward_isa(bool avx2, const BatchNormArgs<double>& a, int64_t c0, int64_t c1) {
  avx2 ? forward_avx2_f64(a, c0, c1) : forward_generic_f64(a, c0, c1);
}
void backward_isa(bool avx2, const BatchNormArgs<float>& a, int64_t c0, int64_t c1) {
  avx2 ? backward_avx2_f32(a, c0, c1) : backward_generic_f32(a, c0, c1);
}
void backward_isa(bool avx2, const BatchNormArgs<double>& a, int64_t c0, int64_t c1) {
  avx2 ? backward_avx2_f64(a, c0, c1) : backward_generic_f64(a, c0, c1);
}

template <class T> T* ptr_or_null(const Tensor& t) { return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr; }

template <class T>
BatchNormArgs<T> args(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& var, double eps) {
  BatchNormArgs<T> a{};
  a.x = static_cast<const T*>(x.raw_data());
  a.w = ptr_or_null<T>(w);
  a.mean = ptr_or_null<T>(mean);
  a.var = ptr_or_null<T>(var);
  a.n = x.size(0);
  a.c = x.size(1);
  a.s = x.size(2);
  a.eps = static_cast<T>(eps);
  return a;
}

/** Channels per parallel piece: about 16K elements, at least one channel. */
int64_t channel_grain(const Tensor& x) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(x.size(0) * x.size(2), 1));
}

template <class T>
void forward_impl(bool avx2, const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y,
                  const Tensor& mean, const Tensor& var) {
  BatchNormArgs<T> a = args<T>(x, w, mean, var, eps);
  a.b = ptr_or_null<T>(b);
  a.y = ptr_or_null<T>(y);
  parallel_for(a.c, channel_grain(x), [&](int64_t c0, int64_t c1) { forward_isa(avx2, a, c0, c1); });
}

template <class T>
void backward_impl(bool avx2, const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& var, double eps,
                   const Tensor& w, const Tensor& dx, const Tensor& dw, const Tensor& db) {
  BatchNormArgs<T> a = args<T>(x, w, mean, var, eps);
  a.g = static_cast<const T*>(g.raw_data());
  a.y = ptr_or_null<T>(dx);
  a.dw = ptr_or_null<T>(dw);
  a.db = ptr_or_null<T>(db);
  parallel_for(a.c, channel_grain(x), [&](int64_t c0, int64_t c1) { backward_isa(avx2, a, c0, c1); });
}

}  // namespace

void CpuBackend::batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                            const Tensor& mean, const Tensor& var) {
  if (x.dtype() == DType::Float64)
    return forward_impl<double>(isa_ != Isa::Generic, x, weight, bias, eps, y, mean, var);
  forward_impl<float>(isa_ != Isa::Generic, x, weight, bias, eps, y, mean, var);
}

void CpuBackend::batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& var,
                                     double eps, const Tensor& weight, const Tensor& dx, const Tensor& dweight,
                                     const Tensor& dbias) {
  if (x.dtype() == DType::Float64)
    return backward_impl<double>(isa_ != Isa::Generic, g, x, mean, var, eps, weight, dx, dweight, dbias);
  backward_impl<float>(isa_ != Isa::Generic, g, x, mean, var, eps, weight, dx, dweight, dbias);
}

}  // namespace ug::cpu
