// Compiled with -fno-math-errno (src/CMakeLists.txt) so sqrt vectorises; each entry point is
// cloned for AVX2 and picked at load time. No FMA clone: results match across machines.
#include "ug/optim/kernels.h"

#include <algorithm>
#include <cmath>

#define UG_OPTIM_CLONES __attribute__((target_clones("avx2", "default")))
#define UG_INLINE [[gnu::always_inline]] inline

namespace ug::optim::kernels {
namespace {

/** torch's lerp: exact at both ends, start + w * (end - start) for small weights. */
template <class T>
UG_INLINE T lerp(T start, T end, T w) {
  return w < T(0.5) ? start + w * (end - start) : end - (end - start) * (T(1) - w);
}

template <class T, bool WD, int Mode>  // Mode 0: no momentum, 1: first step, 2: momentum
UG_INLINE void sgd_loop(const SgdArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict buf = a.momentum_buffer;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), mom = T(a.momentum);
  const T damp = T(1 - a.dampening), neg_lr = T(-a.lr);
  const bool nesterov = a.nesterov;
  for (int64_t i = begin; i < end; ++i) {
    T g = gr[i] * sign;
    if constexpr (WD) g = g + wd * p[i];
    if constexpr (Mode == 1) buf[i] = g;
    if constexpr (Mode == 2) buf[i] = buf[i] * mom + damp * g;
    if constexpr (Mode != 0) g = nesterov ? g + mom * buf[i] : buf[i];
    p[i] = p[i] + neg_lr * g;
  }
}

template <class T>
UG_INLINE void sgd_impl(const SgdArgs<T>& a, int64_t begin, int64_t end) {
  const bool wd = a.weight_decay != 0;
  const int mode = a.momentum == 0 ? 0 : a.first_step ? 1 : 2;
  if (wd) {
    if (mode == 0) sgd_loop<T, true, 0>(a, begin, end);
    if (mode == 1) sgd_loop<T, true, 1>(a, begin, end);
    if (mode == 2) sgd_loop<T, true, 2>(a, begin, end);
  } else {
    if (mode == 0) sgd_loop<T, false, 0>(a, begin, end);
    if (mode == 1) sgd_loop<T, false, 1>(a, begin, end);
    if (mode == 2) sgd_loop<T, false, 2>(a, begin, end);
  }
}

template <class T, bool WD, bool AMS>
UG_INLINE void adam_loop(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict m = a.exp_avg;
  T* __restrict v = a.exp_avg_sq;
  T* __restrict vmax = a.max_exp_avg_sq;
  const double bias_correction1 = 1 - std::pow(a.beta1, a.step);
  const double bias_correction2 = 1 - std::pow(a.beta2, a.step);
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay);
  const T decay = a.decoupled_weight_decay ? T(1 - a.lr * a.weight_decay) : T(1);
  const T w1 = T(1 - a.beta1), beta2 = T(a.beta2), w2 = T(1 - a.beta2), eps = T(a.eps);
  const T bc2_sqrt = T(std::pow(bias_correction2, 0.5)), neg_step_size = T(-(a.lr / bias_correction1));
  for (int64_t i = begin; i < end; ++i) {
    T g = gr[i] * sign;
    T pi = p[i] * decay;
    if constexpr (WD) g = g + wd * pi;
    const T mi = lerp(m[i], g, w1);
    const T vi = v[i] * beta2 + (w2 * g) * g;
    m[i] = mi;
    v[i] = vi;
    T second = vi;
    if constexpr (AMS) second = vmax[i] = std::max(vmax[i], vi);
    const T denom = std::sqrt(second) / bc2_sqrt + eps;
    p[i] = pi + (neg_step_size * mi) / denom;
  }
}

template <class T>
UG_INLINE void adam_impl(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  const bool wd = a.weight_decay != 0 && !a.decoupled_weight_decay, ams = a.max_exp_avg_sq != nullptr;
  if (wd && ams) adam_loop<T, true, true>(a, begin, end);
  if (wd && !ams) adam_loop<T, true, false>(a, begin, end);
  if (!wd && ams) adam_loop<T, false, true>(a, begin, end);
  if (!wd && !ams) adam_loop<T, false, false>(a, begin, end);
}

template <class T, bool WD, bool CENTERED, bool MOM>
UG_INLINE void rmsprop_loop(const RmspropArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict sq = a.square_avg;
  T* __restrict buf = a.momentum_buffer;
  T* __restrict ga = a.grad_avg;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), alpha = T(a.alpha), w = T(1 - a.alpha);
  const T eps = T(a.eps), mom = T(a.momentum), neg_lr = T(-a.lr);
  for (int64_t i = begin; i < end; ++i) {
    T g = gr[i] * sign;
    if constexpr (WD) g = g + wd * p[i];
    const T s = sq[i] * alpha + (w * g) * g;
    sq[i] = s;
    T avg;
    if constexpr (CENTERED) {
      const T gai = lerp(ga[i], g, w);
      ga[i] = gai;
      avg = std::sqrt(s + (T(-1) * gai) * gai);
    } else {
      avg = std::sqrt(s);
    }
    avg = avg + eps;
    if constexpr (MOM) {
      const T b = buf[i] * mom + g / avg;
      buf[i] = b;
      p[i] = p[i] + neg_lr * b;
    } else {
      p[i] = p[i] + (neg_lr * g) / avg;
    }
  }
}

template <class T, bool WD>
UG_INLINE void rmsprop_wd(const RmspropArgs<T>& a, int64_t begin, int64_t end) {
  const bool centered = a.grad_avg != nullptr, mom = a.momentum_buffer != nullptr;
  if (centered && mom) rmsprop_loop<T, WD, true, true>(a, begin, end);
  if (centered && !mom) rmsprop_loop<T, WD, true, false>(a, begin, end);
  if (!centered && mom) rmsprop_loop<T, WD, false, true>(a, begin, end);
  if (!centered && !mom) rmsprop_loop<T, WD, false, false>(a, begin, end);
}

template <class T>
UG_INLINE void rmsprop_impl(const RmspropArgs<T>& a, int64_t begin, int64_t end) {
  if (a.weight_decay != 0)
    rmsprop_wd<T, true>(a, begin, end);
  else
    rmsprop_wd<T, false>(a, begin, end);
}

template <class T, bool WD>
UG_INLINE void adagrad_loop(const AdagradArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict sum = a.sum;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), eps = T(a.eps), neg_clr = T(-a.clr);
  for (int64_t i = begin; i < end; ++i) {
    T g = gr[i] * sign;
    if constexpr (WD) g = g + wd * p[i];
    const T s = sum[i] + g * g;
    sum[i] = s;
    p[i] = p[i] + (neg_clr * g) / (std::sqrt(s) + eps);
  }
}

template <class T>
UG_INLINE void adagrad_impl(const AdagradArgs<T>& a, int64_t begin, int64_t end) {
  if (a.weight_decay != 0)
    adagrad_loop<T, true>(a, begin, end);
  else
    adagrad_loop<T, false>(a, begin, end);
}

}  // namespace

UG_OPTIM_CLONES void sgd(const SgdArgs<float>& a, int64_t begin, int64_t end) { sgd_impl(a, begin, end); }
UG_OPTIM_CLONES void sgd(const SgdArgs<double>& a, int64_t begin, int64_t end) { sgd_impl(a, begin, end); }
UG_OPTIM_CLONES void adam(const AdamArgs<float>& a, int64_t begin, int64_t end) { adam_impl(a, begin, end); }
UG_OPTIM_CLONES void adam(const AdamArgs<double>& a, int64_t begin, int64_t end) { adam_impl(a, begin, end); }
UG_OPTIM_CLONES void rmsprop(const RmspropArgs<float>& a, int64_t begin, int64_t end) { rmsprop_impl(a, begin, end); }
UG_OPTIM_CLONES void rmsprop(const RmspropArgs<double>& a, int64_t begin, int64_t end) { rmsprop_impl(a, begin, end); }
UG_OPTIM_CLONES void adagrad(const AdagradArgs<float>& a, int64_t begin, int64_t end) { adagrad_impl(a, begin, end); }
UG_OPTIM_CLONES void adagrad(const AdagradArgs<double>& a, int64_t begin, int64_t end) { adagrad_impl(a, begin, end); }

}  // namespace ug::optim::kernels
