// Compiled with -fno-math-errno (src/CMakeLists.txt) so sqrt vectorises; each entry point is
// cloned for AVX-512 and AVX2 (by GCC) and picked at load time. -ffp-contract=off keeps the AVX-512
// clone from fusing a multiply and an add: every clone rounds each operation as the scalar
// code does, so results match across machines bit for bit. Adam is bound by its square root
// and division per element (100k floats on one core, AVX-512 clone: 40 us; 92 us scalar).
#include "ug/optim/kernels.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#if defined(__clang__)
// clang 14 makes no clones of these overloaded external functions: it compiles each once, for
// AVX-512, which faults on an AVX2 CPU (the sanitized build on an AVX2 EPYC). It gets the
// baseline loops.
#define UG_OPTIM_CLONES
#else
#define UG_OPTIM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#define UG_INLINE [[gnu::always_inline]] inline
// A lambda's: inlined into each clone, so it is compiled for that clone's instruction set.
#define UG_INLINE_LAMBDA __attribute__((always_inline))

namespace ug::optim::kernels {
namespace {

/** torch's lerp: exact at both ends, start + w * (end - start) for small weights. */
template <class T> UG_INLINE T lerp(T start, T end, T w) {
  return w < T(0.5) ? start + w * (end - start) : end - (end - start) * (T(1) - w);
}

// ---- Weight decay --------------------------------------------------------------------------

/** Whether a loop adds a weight decay term per element: torch's L2 term (not when decoupled:
 *  AdamW's form, a factor the loop multiplies the parameter by), Keras's decoupled term. */
template <class Args> UG_INLINE bool decays(const Args& a) {
  if constexpr (requires { a.decoupled_weight_decay; }) return a.weight_decay != 0 && !a.decoupled_weight_decay;
  else return a.weight_decay != 0;
}

/** Calls loop(wd) with wd std::true_type where decays(a), else std::false_type: the loop
 *  tests the decay once per call, as a template flag, never per element. */
template <class Args, class Loop> UG_INLINE void with_decay(const Args& a, Loop&& loop) {
  if (decays(a)) loop(std::true_type{});
  else loop(std::false_type{});
}

/** torch's L2 weight decay: the gradient plus weight_decay times the parameter. */
template <bool WD, class T> UG_INLINE T l2_decay(T g, T wd, T p) {
  if constexpr (WD) return g + wd * p;
  else return g;
}

/** torch's decoupled weight decay's factor on the parameter, 1 - lr * weight_decay (1 unless
 *  decoupled). */
template <class T, class Args> UG_INLINE T decoupled_factor(const Args& a) {
  return a.decoupled_weight_decay ? T(1 - a.lr * a.weight_decay) : T(1);
}

/** Keras's decoupled weight decay: var - var * wd * lr, in that order. */
template <bool WD, class T> UG_INLINE T keras_decay(T p, T wd, T lr) {
  if constexpr (WD) return p - (p * wd) * lr;
  else return p;
}

// ---- torch ---------------------------------------------------------------------------------

template <class T, bool WD, int Mode>  // Mode 0: no momentum, 1: first step, 2: momentum
UG_INLINE void sgd_loop(const SgdArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict buf = a.momentum_buffer;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), mom = T(a.momentum);
  const T damp = T(1 - a.dampening), neg_lr = T(-a.lr);
  const bool nesterov = a.nesterov;
  for (int64_t i = begin; i < end; ++i) {
    T g = l2_decay<WD>(gr[i] * sign, wd, p[i]);
    if constexpr (Mode == 1) buf[i] = g;
    if constexpr (Mode == 2) buf[i] = buf[i] * mom + damp * g;
    if constexpr (Mode != 0) g = nesterov ? g + mom * buf[i] : buf[i];
    p[i] = p[i] + neg_lr * g;
  }
}

template <class T> UG_INLINE void sgd_impl(const SgdArgs<T>& a, int64_t begin, int64_t end) {
  const int mode = a.momentum == 0 ? 0 : a.first_step ? 1 : 2;
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA {
    if (mode == 0) sgd_loop<T, wd, 0>(a, begin, end);
    if (mode == 1) sgd_loop<T, wd, 1>(a, begin, end);
    if (mode == 2) sgd_loop<T, wd, 2>(a, begin, end);
  });
}

/** What the Adam loop writes where the parameter goes: the new value (in place), the update
 *  (the new value minus the parameter read from param_in), or param_in plus that update. */
enum class AdamOut { kValue, kUpdate, kApplied };

template <class T, bool WD, bool AMS, bool STATE_IN, AdamOut OUT>
UG_INLINE void adam_loop(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  constexpr bool kParamIn = OUT != AdamOut::kValue;
  T* p = a.param;  // may be grad (a compiled step's update written over its dying gradient)
  const T* gr = a.grad;
  T* __restrict m = a.exp_avg;
  T* __restrict v = a.exp_avg_sq;
  T* __restrict vmax = a.max_exp_avg_sq;
  // STATE_IN: the state is read from the *_in arrays (distinct from the written ones), else
  // updated in place; the parameter is read from param_in unless the new value goes in place.
  const T* __restrict p_in = a.param_in;
  const T* __restrict m_in = a.exp_avg_in;
  const T* __restrict v_in = a.exp_avg_sq_in;
  const T* __restrict vmax_in = a.max_exp_avg_sq_in;
  const double bias_correction1 = 1 - std::pow(a.beta1, a.step);
  const double bias_correction2 = 1 - std::pow(a.beta2, a.step);
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay);
  const T decay = decoupled_factor<T>(a);
  const T w1 = T(1 - a.beta1), beta2 = T(a.beta2), w2 = T(1 - a.beta2);
  // torch's p - lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps), with numerator and denominator times
  // sqrt(bc2): one division per element instead of two (the same value to within a rounding).
  const double bc2_sqrt = std::sqrt(bias_correction2);
  const T eps_scaled = T(a.eps * bc2_sqrt), neg_step_scaled = T(-(a.lr / bias_correction1) * bc2_sqrt);
  // Element i reads and writes index i only. Said outright (omp simd: no overlap check at run
  // time): with the *_in arrays the vectoriser would check more pairs of arrays for overlap than
  // it is willing to, and GCC's `ivdep` still checked p against the gradient, which a compiled
  // step's update overwrites (p == grad): the loop ran scalar, 15% of the jitted MLP step.
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#else
#pragma omp simd
#endif
  for (int64_t i = begin; i < end; ++i) {
    const T pi = (kParamIn ? p_in[i] : p[i]) * decay;
    const T g = l2_decay<WD>(gr[i] * sign, wd, pi);
    const T mi = lerp(STATE_IN ? m_in[i] : m[i], g, w1);
    const T vi = (STATE_IN ? v_in[i] : v[i]) * beta2 + (w2 * g) * g;
    m[i] = mi;
    v[i] = vi;
    T second = vi;
    if constexpr (AMS) second = vmax[i] = std::max(STATE_IN ? vmax_in[i] : vmax[i], vi);
    const T next = pi + (neg_step_scaled * mi) / (std::sqrt(second) + eps_scaled);
    if constexpr (OUT == AdamOut::kApplied) p[i] = p_in[i] + (next - p_in[i]);
    else if constexpr (OUT == AdamOut::kUpdate) p[i] = next - p_in[i];
    else p[i] = next;
  }
}

template <class T, bool STATE_IN, AdamOut OUT>
UG_INLINE void adam_variant(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  const bool ams = a.max_exp_avg_sq != nullptr;
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA {
    if (ams) adam_loop<T, wd, true, STATE_IN, OUT>(a, begin, end);
    else adam_loop<T, wd, false, STATE_IN, OUT>(a, begin, end);
  });
}

template <class T> UG_INLINE void adam_impl(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  if (!a.param_in) return adam_variant<T, false, AdamOut::kValue>(a, begin, end);
  const bool state_in = a.exp_avg_in != nullptr;
  if (state_in && a.applied) return adam_variant<T, true, AdamOut::kApplied>(a, begin, end);
  if (state_in) return adam_variant<T, true, AdamOut::kUpdate>(a, begin, end);
  if (a.applied) return adam_variant<T, false, AdamOut::kApplied>(a, begin, end);
  adam_variant<T, false, AdamOut::kUpdate>(a, begin, end);
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
    const T g = l2_decay<WD>(gr[i] * sign, wd, p[i]);
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

template <class T> UG_INLINE void rmsprop_impl(const RmspropArgs<T>& a, int64_t begin, int64_t end) {
  const bool centered = a.grad_avg != nullptr, mom = a.momentum_buffer != nullptr;
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA {
    if (centered && mom) rmsprop_loop<T, wd, true, true>(a, begin, end);
    if (centered && !mom) rmsprop_loop<T, wd, true, false>(a, begin, end);
    if (!centered && mom) rmsprop_loop<T, wd, false, true>(a, begin, end);
    if (!centered && !mom) rmsprop_loop<T, wd, false, false>(a, begin, end);
  });
}

template <class T, bool WD> UG_INLINE void adagrad_loop(const AdagradArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict sum = a.sum;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), eps = T(a.eps), neg_clr = T(-a.clr);
  for (int64_t i = begin; i < end; ++i) {
    const T g = l2_decay<WD>(gr[i] * sign, wd, p[i]);
    const T s = sum[i] + g * g;
    sum[i] = s;
    p[i] = p[i] + (neg_clr * g) / (std::sqrt(s) + eps);
  }
}

template <class T> UG_INLINE void adagrad_impl(const AdagradArgs<T>& a, int64_t begin, int64_t end) {
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA { adagrad_loop<T, wd>(a, begin, end); });
}

/** Adam's first and second moments, torch's lerp_ and mul_(beta2).addcmul_(g, g, 1 - beta2). */
template <class T> UG_INLINE void moments(T& m, T& v, T g, T w1, T beta2, T w2) {
  m = lerp(m, g, w1);
  v = v * beta2 + (w2 * g) * g;
}

template <class T, bool WD> UG_INLINE void nadam_loop(const NadamArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict m = a.exp_avg;
  T* __restrict v = a.exp_avg_sq;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay);
  const T decay = decoupled_factor<T>(a);
  const T w1 = T(1 - a.beta1), beta2 = T(a.beta2), w2 = T(1 - a.beta2), bc2 = T(a.bias_correction2);
  const T eps = T(a.eps), c_grad = T(a.c_grad), c_avg = T(a.c_avg);
  for (int64_t i = begin; i < end; ++i) {
    T pi = p[i] * decay;
    const T g = l2_decay<WD>(gr[i] * sign, wd, pi);
    T mi = m[i], vi = v[i];
    moments(mi, vi, g, w1, beta2, w2);
    m[i] = mi;
    v[i] = vi;
    const T denom = std::sqrt(vi / bc2) + eps;
    pi = pi + (c_grad * g) / denom;
    p[i] = pi + (c_avg * mi) / denom;
  }
}

template <class T> UG_INLINE void nadam_impl(const NadamArgs<T>& a, int64_t begin, int64_t end) {
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA { nadam_loop<T, wd>(a, begin, end); });
}

template <class T, bool WD, bool RECT> UG_INLINE void radam_loop(const RadamArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict m = a.exp_avg;
  T* __restrict v = a.exp_avg_sq;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay);
  const T decay = decoupled_factor<T>(a);
  const T w1 = T(1 - a.beta1), beta2 = T(a.beta2), w2 = T(1 - a.beta2), bc1 = T(a.bias_correction1);
  const T lr = T(a.lr), eps = T(a.eps), bc2_sqrt = T(std::sqrt(a.bias_correction2)), rect = T(a.rect);
  for (int64_t i = begin; i < end; ++i) {
    const T pi = p[i] * decay;
    const T g = l2_decay<WD>(gr[i] * sign, wd, pi);
    T mi = m[i], vi = v[i];
    moments(mi, vi, g, w1, beta2, w2);
    m[i] = mi;
    v[i] = vi;
    T step = (mi / bc1) * lr;
    // torch's scalar / tensor is the tensor's reciprocal times the scalar
    if constexpr (RECT) step = (step * ((T(1) / (std::sqrt(vi) + eps)) * bc2_sqrt)) * rect;
    p[i] = pi - step;
  }
}

template <class T> UG_INLINE void radam_impl(const RadamArgs<T>& a, int64_t begin, int64_t end) {
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA {
    if (a.rect != 0) radam_loop<T, wd, true>(a, begin, end);
    else radam_loop<T, wd, false>(a, begin, end);
  });
}

template <class T, bool WD> UG_INLINE void adamax_loop(const AdamaxArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict m = a.exp_avg;
  T* __restrict u = a.exp_inf;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), w1 = T(1 - a.beta1), beta2 = T(a.beta2);
  const T eps = T(a.eps), neg_clr = T(-a.clr);
  for (int64_t i = begin; i < end; ++i) {
    const T g = l2_decay<WD>(gr[i] * sign, wd, p[i]);
    const T mi = lerp(m[i], g, w1);
    m[i] = mi;
    const T ui = std::max(u[i] * beta2, std::abs(g) + eps);
    u[i] = ui;
    p[i] = p[i] + (neg_clr * mi) / ui;
  }
}

template <class T> UG_INLINE void adamax_impl(const AdamaxArgs<T>& a, int64_t begin, int64_t end) {
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA { adamax_loop<T, wd>(a, begin, end); });
}

template <class T, bool WD> UG_INLINE void adadelta_loop(const AdadeltaArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict sq = a.square_avg;
  T* __restrict acc = a.acc_delta;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), rho = T(a.rho), w = T(1 - a.rho);
  const T eps = T(a.eps), neg_lr = T(-a.lr);
  for (int64_t i = begin; i < end; ++i) {
    const T g = l2_decay<WD>(gr[i] * sign, wd, p[i]);
    const T s = sq[i] * rho + (w * g) * g;
    sq[i] = s;
    const T delta = (std::sqrt(acc[i] + eps) / std::sqrt(s + eps)) * g;
    acc[i] = acc[i] * rho + (w * delta) * delta;
    p[i] = p[i] + neg_lr * delta;
  }
}

template <class T> UG_INLINE void adadelta_impl(const AdadeltaArgs<T>& a, int64_t begin, int64_t end) {
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA { adadelta_loop<T, wd>(a, begin, end); });
}

template <class T> UG_INLINE void rprop_impl(const RpropArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict prev = a.prev;
  T* __restrict size = a.step_size;
  const T sign = a.maximize ? T(-1) : T(1), etaminus = T(a.etaminus), etaplus = T(a.etaplus);
  const T lo = T(a.step_size_min), hi = T(a.step_size_max);
  for (int64_t i = begin; i < end; ++i) {
    T g = gr[i] * sign;
    const T agree = g * prev[i];
    const T factor = agree > T(0) ? etaplus : agree < T(0) ? etaminus : T(1);
    const T si = std::min(std::max(size[i] * factor, lo), hi);
    size[i] = si;
    if (agree < T(0)) g = T(0);  // a sign change: no step now, and none remembered
    const T g_sign = g > T(0) ? T(1) : g < T(0) ? T(-1) : T(0);
    p[i] = p[i] + (T(-1) * g_sign) * si;
    prev[i] = g;
  }
}

template <class T, bool WD> UG_INLINE void asgd_loop(const AsgdArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict ax = a.ax;
  const T sign = a.maximize ? T(-1) : T(1), wd = T(a.weight_decay), decay = T(1 - a.lambd * a.eta);
  const T neg_eta = T(-a.eta), mu = T(a.mu);
  const bool average = a.mu != 1;
  for (int64_t i = begin; i < end; ++i) {
    const T g = l2_decay<WD>(gr[i] * sign, wd, p[i]);
    const T pi = p[i] * decay + neg_eta * g;
    p[i] = pi;
    ax[i] = average ? ax[i] + (pi - ax[i]) * mu : pi;
  }
}

template <class T> UG_INLINE void asgd_impl(const AsgdArgs<T>& a, int64_t begin, int64_t end) {
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA { asgd_loop<T, wd>(a, begin, end); });
}

/** sqrt of a sum of squares accumulated in double, rounded to T as torch's norm result. */
template <class T> T norm2(const T* x, int64_t n, int64_t stride = 1) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i * stride]) * double(x[i * stride]);
  return T(std::sqrt(s));
}

template <class T> void adafactor_impl(const AdafactorArgs<T>& a) {
  const int64_t n = a.numel, R = a.rows, C = a.cols;
  T* __restrict p = a.param;
  std::vector<T> g(a.grad, a.grad + n), update(n);
  if (a.maximize)
    for (T& v : g) v = -v;
  // The relative step: the parameter's RMS (before weight decay) times rho.
  const double alpha = std::max(a.eps2, double(norm2(p, n)) / std::pow(double(n), 0.5)) * a.rho;
  if (a.weight_decay != 0) {
    const T decay = T(1 - a.lr * a.weight_decay);
    for (int64_t i = 0; i < n; ++i) p[i] = p[i] * decay;
  }
  const T w = T(a.one_minus_beta2), eps1 = T(a.eps1), eps1_sq = T(a.eps1 * a.eps1);
  if (a.row_var) {
    for (int64_t b = 0; b < a.batch; ++b) {
      const T* gb = g.data() + b * R * C;
      T* rv = a.row_var + b * R;
      T* cv = a.col_var + b * C;
      for (int64_t r = 0; r < R; ++r) {
        const T nr = norm2(gb + r * C, C);
        rv[r] = lerp(rv[r], (nr * nr) / T(C), w);
      }
      for (int64_t c = 0; c < C; ++c) {
        const T nc = norm2(gb + c, R, C);
        cv[c] = lerp(cv[c], (nc * nc) / T(R), w);
      }
      double sum = 0;
      for (int64_t r = 0; r < R; ++r) sum += double(rv[r]);
      const T row_mean = std::max(T(T(sum) / T(R)), eps1);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) update[b * R * C + r * C + c] = (rv[r] * cv[c]) / row_mean;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) update[i] = a.variance[i] = lerp(a.variance[i], g[i] * g[i], w);
  }
  for (int64_t i = 0; i < n; ++i) update[i] = (T(1) / std::sqrt(std::max(update[i], eps1_sq))) * g[i];
  // Update clipping: the update's RMS at most d.
  const double denom = std::max(1.0, double(norm2(update.data(), n)) / (std::pow(double(n), 0.5) * a.d));
  const T step = T(-alpha / denom);
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] + step * update[i];
}

// ---- Keras ---------------------------------------------------------------------------------

template <class T, bool WD, int Mode>  // Mode 0: no momentum, 1: momentum, 2: Nesterov
UG_INLINE void keras_sgd_loop(const KerasSgdArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict m = a.momentum_buffer;
  const T lr = T(a.lr), mom = T(a.momentum), wd = T(a.weight_decay);
  for (int64_t i = begin; i < end; ++i) {
    T pi = keras_decay<WD>(p[i], wd, lr);
    const T g = gr[i];
    if constexpr (Mode == 0) {
      pi = pi - g * lr;
    } else {
      // Keras's buffer is the step itself, lr included (torch's leaves lr out).
      const T mi = m[i] * mom - g * lr;
      m[i] = mi;
      pi = Mode == 2 ? pi + (mi * mom - g * lr) : pi + mi;
    }
    p[i] = pi;
  }
}

template <class T> UG_INLINE void keras_sgd_impl(const KerasSgdArgs<T>& a, int64_t begin, int64_t end) {
  const int mode = a.momentum_buffer == nullptr ? 0 : a.nesterov ? 2 : 1;
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA {
    if (mode == 0) keras_sgd_loop<T, wd, 0>(a, begin, end);
    if (mode == 1) keras_sgd_loop<T, wd, 1>(a, begin, end);
    if (mode == 2) keras_sgd_loop<T, wd, 2>(a, begin, end);
  });
}

template <class T, bool WD, bool AMS>
UG_INLINE void keras_adam_loop(const KerasAdamArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict m = a.momentum;
  T* __restrict v = a.velocity;
  T* __restrict vhat = a.velocity_hat;
  const T lr = T(a.lr), step = T(a.step), wd = T(a.weight_decay), eps = T(a.epsilon);
  const T w1 = T(1 - a.beta_1), w2 = T(1 - a.beta_2);
  // The bias corrections fold into the step size; epsilon is added to the uncorrected sqrt(v).
  const T alpha = lr * std::sqrt(T(1) - std::pow(T(a.beta_2), step)) / (T(1) - std::pow(T(a.beta_1), step));
  for (int64_t i = begin; i < end; ++i) {
    const T pi = keras_decay<WD>(p[i], wd, lr);
    const T g = gr[i];
    const T mi = m[i] + (g - m[i]) * w1;
    T vi = v[i] + (g * g - v[i]) * w2;
    m[i] = mi;
    v[i] = vi;
    if constexpr (AMS) vi = vhat[i] = std::max(vhat[i], vi);
    p[i] = pi - (mi * alpha) / (std::sqrt(vi) + eps);
  }
}

template <class T> UG_INLINE void keras_adam_impl(const KerasAdamArgs<T>& a, int64_t begin, int64_t end) {
  const bool ams = a.velocity_hat != nullptr;
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA {
    if (ams) keras_adam_loop<T, wd, true>(a, begin, end);
    else keras_adam_loop<T, wd, false>(a, begin, end);
  });
}

template <class T, bool WD, bool CENTERED, bool MOM>
UG_INLINE void keras_rmsprop_loop(const KerasRmspropArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict v = a.velocity;
  T* __restrict m = a.momentum_buffer;
  T* __restrict ga = a.average_gradient;
  const T lr = T(a.lr), rho = T(a.rho), w = T(1 - a.rho), mom = T(a.momentum), eps = T(a.epsilon);
  const T wd = T(a.weight_decay);
  for (int64_t i = begin; i < end; ++i) {
    const T pi = keras_decay<WD>(p[i], wd, lr);
    const T g = gr[i];
    const T vi = rho * v[i] + w * (g * g);
    v[i] = vi;
    T denominator;  // epsilon goes under the square root
    if constexpr (CENTERED) {
      const T gai = rho * ga[i] + w * g;
      ga[i] = gai;
      denominator = vi - gai * gai + eps;
    } else {
      denominator = vi + eps;
    }
    const T increment = (lr * g) / std::sqrt(denominator);
    if constexpr (MOM) {
      const T mi = mom * m[i] + increment;
      m[i] = mi;
      p[i] = pi - mi;
    } else {
      p[i] = pi - increment;
    }
  }
}

template <class T> UG_INLINE void keras_rmsprop_impl(const KerasRmspropArgs<T>& a, int64_t begin, int64_t end) {
  const bool centered = a.average_gradient != nullptr, mom = a.momentum_buffer != nullptr;
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA {
    if (centered && mom) keras_rmsprop_loop<T, wd, true, true>(a, begin, end);
    if (centered && !mom) keras_rmsprop_loop<T, wd, true, false>(a, begin, end);
    if (!centered && mom) keras_rmsprop_loop<T, wd, false, true>(a, begin, end);
    if (!centered && !mom) keras_rmsprop_loop<T, wd, false, false>(a, begin, end);
  });
}

template <class T, bool WD>
UG_INLINE void keras_adagrad_loop(const KerasAdagradArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.param;
  const T* __restrict gr = a.grad;
  T* __restrict acc = a.accumulator;
  const T lr = T(a.lr), eps = T(a.epsilon), wd = T(a.weight_decay);
  for (int64_t i = begin; i < end; ++i) {
    const T pi = keras_decay<WD>(p[i], wd, lr);
    const T g = gr[i];
    const T s = acc[i] + g * g;
    acc[i] = s;
    p[i] = pi - (lr * g) / std::sqrt(s + eps);
  }
}

template <class T> UG_INLINE void keras_adagrad_impl(const KerasAdagradArgs<T>& a, int64_t begin, int64_t end) {
  with_decay(a, [&](auto wd) UG_INLINE_LAMBDA { keras_adagrad_loop<T, wd>(a, begin, end); });
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
UG_OPTIM_CLONES void nadam(const NadamArgs<float>& a, int64_t begin, int64_t end) { nadam_impl(a, begin, end); }
UG_OPTIM_CLONES void nadam(const NadamArgs<double>& a, int64_t begin, int64_t end) { nadam_impl(a, begin, end); }
UG_OPTIM_CLONES void radam(const RadamArgs<float>& a, int64_t begin, int64_t end) { radam_impl(a, begin, end); }
UG_OPTIM_CLONES void radam(const RadamArgs<double>& a, int64_t begin, int64_t end) { radam_impl(a, begin, end); }
UG_OPTIM_CLONES void adamax(const AdamaxArgs<float>& a, int64_t begin, int64_t end) { adamax_impl(a, begin, end); }
UG_OPTIM_CLONES void adamax(const AdamaxArgs<double>& a, int64_t begin, int64_t end) { adamax_impl(a, begin, end); }
UG_OPTIM_CLONES void adadelta(const AdadeltaArgs<float>& a, int64_t begin, int64_t end) {
  adadelta_impl(a, begin, end);
}
UG_OPTIM_CLONES void adadelta(const AdadeltaArgs<double>& a, int64_t begin, int64_t end) {
  adadelta_impl(a, begin, end);
}
UG_OPTIM_CLONES void rprop(const RpropArgs<float>& a, int64_t begin, int64_t end) { rprop_impl(a, begin, end); }
UG_OPTIM_CLONES void rprop(const RpropArgs<double>& a, int64_t begin, int64_t end) { rprop_impl(a, begin, end); }
UG_OPTIM_CLONES void asgd(const AsgdArgs<float>& a, int64_t begin, int64_t end) { asgd_impl(a, begin, end); }
UG_OPTIM_CLONES void asgd(const AsgdArgs<double>& a, int64_t begin, int64_t end) { asgd_impl(a, begin, end); }
void adafactor(const AdafactorArgs<float>& a) { adafactor_impl(a); }
void adafactor(const AdafactorArgs<double>& a) { adafactor_impl(a); }
UG_OPTIM_CLONES void keras_sgd(const KerasSgdArgs<float>& a, int64_t begin, int64_t end) {
  keras_sgd_impl(a, begin, end);
}
UG_OPTIM_CLONES void keras_sgd(const KerasSgdArgs<double>& a, int64_t begin, int64_t end) {
  keras_sgd_impl(a, begin, end);
}
UG_OPTIM_CLONES void keras_adam(const KerasAdamArgs<float>& a, int64_t begin, int64_t end) {
  keras_adam_impl(a, begin, end);
}
UG_OPTIM_CLONES void keras_adam(const KerasAdamArgs<double>& a, int64_t begin, int64_t end) {
  keras_adam_impl(a, begin, end);
}
UG_OPTIM_CLONES void keras_rmsprop(const KerasRmspropArgs<float>& a, int64_t begin, int64_t end) {
  keras_rmsprop_impl(a, begin, end);
}
UG_OPTIM_CLONES void keras_rmsprop(const KerasRmspropArgs<double>& a, int64_t begin, int64_t end) {
  keras_rmsprop_impl(a, begin, end);
}
UG_OPTIM_CLONES void keras_adagrad(const KerasAdagradArgs<float>& a, int64_t begin, int64_t end) {
  keras_adagrad_impl(a, begin, end);
}
UG_OPTIM_CLONES void keras_adagrad(const KerasAdagradArgs<double>& a, int64_t begin, int64_t end) {
  keras_adagrad_impl(a, begin, end);
}

}  // namespace ug::optim::kernels
