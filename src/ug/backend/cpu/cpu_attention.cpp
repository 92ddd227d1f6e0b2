// Fused attention, flash-attention style: the forward runs over blocks of kQBlock query rows
// and kKBlock keys, keeping each row's running maximum, sum of exponentials and unnormalised
// output (an online softmax), so the [L, S] probabilities never exist beyond one tile; it
// writes the output and each row's log-sum-exp. The backward recomputes each tile's
// probabilities from q, k and the log-sum-exp. Products of tiles go to OpenBLAS (single
// threaded, the pool splits the work); the exponentials and row updates are compiled twice,
// for x86-64 and AVX2+FMA, as the other fused kernels (cpu_norm.cpp), exp vectorised through
// libmvec (vector_math.h). 16-bit inputs are widened tile by tile into float32 and the results
// rounded once.
//
// The forward splits the work into (batch, query head, query block) tasks; the backward into
// (batch, key/value head) tasks, each owning its slice of dk and dv and visiting its group's
// query heads in order, so the sums run in one order whatever the thread count.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/backend/cpu/vector_math.h"
#include "ug/core/half.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

constexpr int64_t kQBlock = 64, kKBlock = 256;
constexpr int kLanes = 8;  // independent accumulators, so the compiler vectorises the sums

template <class S> using Compute = std::conditional_t<std::is_same_v<S, double>, double, float>;

/** A 4-d [B, H, R, C] operand with a unit last stride. */
template <class S> struct View {
  S* p = nullptr;
  int64_t sb = 0, sh = 0, sr = 0;
  S* row(int64_t b, int64_t h, int64_t r) const { return p + b * sb + h * sh + r * sr; }
};
template <class S> View<S> view(const Tensor& t) {
  return {static_cast<S*>(t.raw_data()), t.stride(0), t.stride(1), t.stride(2)};
}

/** The mask [B, H, L, S] with any strides: bool (keep) or additive of the query's dtype. */
template <class S> struct Mask {
  const bool* keep = nullptr;
  const S* add = nullptr;
  int64_t sb = 0, sh = 0, sr = 0, sc = 0;
};

/** Rows [r0, r0 + n) of slice (b, h) as T with `cols` columns: in place when they already are
 *  (ld = the row stride), else widened into buf (ld = cols). */
template <class T, class S>
const T* rows(const View<S>& t, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t cols, T* buf, int64_t& ld) {
  const S* base = t.row(b, h, r0);
  if constexpr (std::is_same_v<S, T>) {
    if (t.sr >= cols || n == 1) {
      ld = std::max(t.sr, cols);
      return base;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < cols; ++c) buf[i * cols + c] = static_cast<T>(base[i * t.sr + c]);
  ld = cols;
  return buf;
}

/** sum over e < n of a[e] b[e], in kLanes partial sums (vectorised). */
template <class T> [[gnu::always_inline]] inline T dot(const T* a, const T* b, int64_t n) {
  T part[kLanes] = {};
  int64_t e = 0;
  for (; e + kLanes <= n; e += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] += a[e + l] * b[e + l];
  T sum = 0;
  for (; e < n; ++e) sum += a[e] * b[e];
  for (int l = 0; l < kLanes; ++l) sum += part[l];
  return sum;
}

template <class T, class S> void store_row(const T* src, S* dst, int64_t n, T factor) {
  for (int64_t c = 0; c < n; ++c) dst[c] = static_cast<S>(src[c] * factor);
}

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, A, B, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else cblas_dgemm(CblasRowMajor, A, B, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/** Masks the scores tile s [n, nk] of query rows i0.. and keys j0..: -inf where not attended. */
template <class T, class S>
void apply_mask(T* s, int64_t n, int64_t nk, int64_t i0, int64_t j0, bool causal, const Mask<S>& m, int64_t b,
                int64_t h) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    T* sr = s + i * nk;
    if (causal)
      for (int64_t j = std::max<int64_t>(0, i0 + i + 1 - j0); j < nk; ++j) sr[j] = kNegInf;
    const int64_t off = b * m.sb + h * m.sh + (i0 + i) * m.sr + j0 * m.sc;
    if (m.keep) {
      const bool* kr = m.keep + off;
      for (int64_t j = 0; j < nk; ++j)
        if (!kr[j * m.sc]) sr[j] = kNegInf;
    } else if (m.add) {
      const S* ar = m.add + off;
      for (int64_t j = 0; j < nk; ++j) sr[j] += static_cast<T>(ar[j * m.sc]);
    }
  }
}

template <class T> [[gnu::always_inline]] inline T row_max(const T* x, int64_t n) {
  T acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = -std::numeric_limits<T>::infinity();
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = x[c + l] > acc[l] ? x[c + l] : acc[l];
  T m = acc[0];
  for (int l = 1; l < kLanes; ++l) m = acc[l] > m ? acc[l] : m;
  for (; c < n; ++c) m = x[c] > m ? x[c] : m;
  return m;
}

/** One key block of the online softmax: s [n, nk] becomes exp(s - new max) (0 where masked),
 *  each row's max m and sum l move on, and its output acc [n, ev] is rescaled to the new max. */
template <class T>
[[gnu::always_inline]] inline void online_rows(T* s, int64_t n, int64_t nk, T* m, T* l, T* acc, int64_t ev) {
  for (int64_t r = 0; r < n; ++r) {
    T* sr = s + r * nk;
    const T mx = std::max(m[r], row_max(sr, nk));
    if (mx == -std::numeric_limits<T>::infinity()) {  // every key so far masked
      std::fill(sr, sr + nk, T(0));
      continue;
    }
    for (int64_t c = 0; c < nk; ++c) sr[c] = std::exp(sr[c] - mx);
    T part[kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= nk; c += kLanes)
      for (int q = 0; q < kLanes; ++q) part[q] += sr[c + q];
    T sum = 0;
    for (; c < nk; ++c) sum += sr[c];
    for (int q = 0; q < kLanes; ++q) sum += part[q];
    const T corr = std::exp(m[r] - mx);  // 0 while m is -inf
    l[r] = l[r] * corr + sum;
    m[r] = mx;
    if (corr != T(1))
      for (int64_t e = 0; e < ev; ++e) acc[r * ev + e] *= corr;
  }
}

/** The backward's tile: s [n, nk] (scaled, masked scores) becomes p = exp(s - lse) and dp
 *  (g v^T) becomes ds = p (dp - d), d being each row's sum of g * out. */
template <class T>
[[gnu::always_inline]] inline void grad_rows(T* s, T* dp, int64_t n, int64_t nk, const T* lse, const T* d) {
  for (int64_t r = 0; r < n; ++r) {
    T* sr = s + r * nk;
    T* dr = dp + r * nk;
    const T ls = lse[r], dd = d[r];
    for (int64_t c = 0; c < nk; ++c) sr[c] = std::exp(sr[c] - ls);
    for (int64_t c = 0; c < nk; ++c) dr[c] = sr[c] * (dr[c] - dd);
  }
}

#define UG_ATTENTION_VARIANTS(T, suffix)                                                                               \
  void online_generic_##suffix(T* s, int64_t n, int64_t nk, T* m, T* l, T* acc, int64_t ev) {                          \
    online_rows(s, n, nk, m, l, acc, ev);                                                                              \
  }                                                                                                                    \
  [[gnu::target("avx2,fma")]] void online_avx2_##suffix(T* s, int64_t n, int64_t nk, T* m, T* l, T* acc, int64_t ev) { \
    online_rows(s, n, nk, m, l, acc, ev);                                                                              \
  }                                                                                                                    \
  void grad_generic_##suffix(T* s, T* dp, int64_t n, int64_t nk, const T* lse, const T* d) {                           \
    grad_rows(s, dp, n, nk, lse, d);                                                                                   \
  }                                                                                                                    \
  [[gnu::target("avx2,fma")]] void grad_avx2_##suffix(T* s, T* dp, int64_t n, int64_t nk, const T* lse, const T* d) {  \
    grad_rows(s, dp, n, nk, lse, d);                                                                                   \
  }
UG_ATTENTION_VARIANTS(float, f32)
UG_ATTENTION_VARIANTS(double, f64)
#undef UG_ATTENTION_VARIANTS

void online_isa(bool avx2, float* s, int64_t n, int64_t nk, float* m, float* l, float* acc, int64_t ev) {
  avx2 ? online_avx2_f32(s, n, nk, m, l, acc, ev) : online_generic_f32(s, n, nk, m, l, acc, ev);
}
void online_isa(bool avx2, double* s, int64_t n, int64_t nk, double* m, double* l, double* acc, int64_t ev) {
  avx2 ? online_avx2_f64(s, n, nk, m, l, acc, ev) : online_generic_f64(s, n, nk, m, l, acc, ev);
}
void grad_isa(bool avx2, float* s, float* dp, int64_t n, int64_t nk, const float* lse, const float* d) {
  avx2 ? grad_avx2_f32(s, dp, n, nk, lse, d) : grad_generic_f32(s, dp, n, nk, lse, d);
}
void grad_isa(bool avx2, double* s, double* dp, int64_t n, int64_t nk, const double* lse, const double* d) {
  avx2 ? grad_avx2_f64(s, dp, n, nk, lse, d) : grad_generic_f64(s, dp, n, nk, lse, d);
}

/** The sizes and operands both directions share. */
template <class S> struct Problem {
  int64_t B, Hq, Hk, L, Sk, E, Ev;
  View<S> q, k, v, out;
  Mask<S> mask;
  bool causal;
  double scale;

  Problem(const Tensor& tq, const Tensor& tk, const Tensor& tv, const Tensor& tmask, bool is_causal, double sc,
          const Tensor& tout)
      : B(tq.size(0)),
        Hq(tq.size(1)),
        Hk(tk.size(1)),
        L(tq.size(2)),
        Sk(tk.size(2)),
        E(tq.size(3)),
        Ev(tv.size(3)),
        q(view<S>(tq)),
        k(view<S>(tk)),
        v(view<S>(tv)),
        out(view<S>(tout)),
        causal(is_causal),
        scale(sc) {
    if (tmask.defined()) {
      if (tmask.dtype() == DType::Bool) mask.keep = static_cast<const bool*>(tmask.raw_data());
      else mask.add = static_cast<const S*>(tmask.raw_data());
      mask.sb = tmask.stride(0), mask.sh = tmask.stride(1), mask.sr = tmask.stride(2), mask.sc = tmask.stride(3);
    }
  }
  int64_t group() const { return Hq / Hk; }
  /** The keys query rows below i1 may attend: causal rows stop at their own position. */
  int64_t key_end(int64_t i1) const { return causal ? std::min(Sk, i1) : Sk; }
};

template <class S> void attention_impl(bool avx2, const Problem<S>& p, const Tensor& lse_t) {
  using T = Compute<S>;
  T* lse = static_cast<T*>(lse_t.raw_data());
  const int64_t qblocks = (p.L + kQBlock - 1) / kQBlock;
  parallel_for(p.B * p.Hq * qblocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<T> qbuf(kQBlock * p.E), kbuf(kKBlock * p.E), vbuf(kKBlock * p.Ev), s(kQBlock * kKBlock),
        acc(kQBlock * p.Ev), m(kQBlock), l(kQBlock);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bh = t / qblocks, b = bh / p.Hq, h = bh % p.Hq, hk = h / p.group();
      const int64_t i0 = (t % qblocks) * kQBlock, n = std::min(kQBlock, p.L - i0);
      int64_t ldq, ldk, ldv;
      const T* qp = rows(p.q, b, h, i0, n, p.E, qbuf.data(), ldq);
      std::fill(m.begin(), m.end(), -std::numeric_limits<T>::infinity());
      std::fill(l.begin(), l.end(), T(0));
      std::fill(acc.begin(), acc.end(), T(0));
      const int64_t s_end = p.key_end(i0 + n);
      for (int64_t j0 = 0; j0 < s_end; j0 += kKBlock) {
        const int64_t nk = std::min(kKBlock, s_end - j0);
        const T* kp = rows(p.k, b, hk, j0, nk, p.E, kbuf.data(), ldk);
        gemm<T>(false, true, n, nk, p.E, static_cast<T>(p.scale), qp, ldq, kp, ldk, 0, s.data(), nk);
        apply_mask(s.data(), n, nk, i0, j0, p.causal, p.mask, b, h);
        online_isa(avx2, s.data(), n, nk, m.data(), l.data(), acc.data(), p.Ev);
        const T* vp = rows(p.v, b, hk, j0, nk, p.Ev, vbuf.data(), ldv);
        gemm<T>(false, false, n, p.Ev, nk, 1, s.data(), nk, vp, ldv, 1, acc.data(), p.Ev);
      }
      T* lr = lse + bh * p.L + i0;
      for (int64_t i = 0; i < n; ++i) {
        const bool dead = l[i] == T(0);  // no key attended: output 0, as torch's CPU kernel
        lr[i] = dead ? std::numeric_limits<T>::infinity() : m[i] + std::log(l[i]);
        store_row(acc.data() + i * p.Ev, p.out.row(b, h, i0 + i), p.Ev, dead ? T(0) : T(1) / l[i]);
      }
    }
  });
}

template <class S>
void attention_backward_impl(bool avx2, const Problem<S>& p, const Tensor& g_t, const Tensor& lse_t, const Tensor& dq_t,
                             const Tensor& dk_t, const Tensor& dv_t) {
  using T = Compute<S>;
  const View<S> g = view<S>(g_t), dq = view<S>(dq_t), dk = view<S>(dk_t), dv = view<S>(dv_t);
  const T* lse = static_cast<const T*>(lse_t.raw_data());
  parallel_for(p.B * p.Hk, 1, [&](int64_t t0, int64_t t1) {
    std::vector<T> kbuf(p.Sk * p.E), vbuf(p.Sk * p.Ev), dk_acc(p.Sk * p.E), dv_acc(p.Sk * p.Ev), qbuf(kQBlock * p.E),
        gbuf(kQBlock * p.Ev), obuf(kQBlock * p.Ev), dq_acc(kQBlock * p.E), s(kQBlock * kKBlock), dp(kQBlock * kKBlock),
        d(kQBlock);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / p.Hk, hk = t % p.Hk;
      int64_t ldk, ldv, ldq, ldg, ldo;
      const T* kp = rows(p.k, b, hk, 0, p.Sk, p.E, kbuf.data(), ldk);
      const T* vp = rows(p.v, b, hk, 0, p.Sk, p.Ev, vbuf.data(), ldv);
      std::fill(dk_acc.begin(), dk_acc.end(), T(0));
      std::fill(dv_acc.begin(), dv_acc.end(), T(0));
      for (int64_t h = hk * p.group(); h < (hk + 1) * p.group(); ++h) {
        for (int64_t i0 = 0; i0 < p.L; i0 += kQBlock) {
          const int64_t n = std::min(kQBlock, p.L - i0);
          const T* qp = rows(p.q, b, h, i0, n, p.E, qbuf.data(), ldq);
          const T* gp = rows(g, b, h, i0, n, p.Ev, gbuf.data(), ldg);
          const T* op = rows(p.out, b, h, i0, n, p.Ev, obuf.data(), ldo);
          for (int64_t i = 0; i < n; ++i) d[i] = dot(gp + i * ldg, op + i * ldo, p.Ev);
          const T* lr = lse + (b * p.Hq + h) * p.L + i0;
          std::fill(dq_acc.begin(), dq_acc.end(), T(0));
          const T sc = static_cast<T>(p.scale);
          const int64_t s_end = p.key_end(i0 + n);
          for (int64_t j0 = 0; j0 < s_end; j0 += kKBlock) {
            const int64_t nk = std::min(kKBlock, s_end - j0);
            const T* kj = kp + j0 * ldk;
            gemm<T>(false, true, n, nk, p.E, sc, qp, ldq, kj, ldk, 0, s.data(), nk);
            apply_mask(s.data(), n, nk, i0, j0, p.causal, p.mask, b, h);
            gemm<T>(false, true, n, nk, p.Ev, 1, gp, ldg, vp + j0 * ldv, ldv, 0, dp.data(), nk);
            grad_isa(avx2, s.data(), dp.data(), n, nk, lr, d.data());
            gemm<T>(true, false, nk, p.Ev, n, 1, s.data(), nk, gp, ldg, 1, dv_acc.data() + j0 * p.Ev, p.Ev);
            gemm<T>(false, false, n, p.E, nk, sc, dp.data(), nk, kj, ldk, 1, dq_acc.data(), p.E);
            gemm<T>(true, false, nk, p.E, n, sc, dp.data(), nk, qp, ldq, 1, dk_acc.data() + j0 * p.E, p.E);
          }
          for (int64_t i = 0; i < n; ++i) store_row(dq_acc.data() + i * p.E, dq.row(b, h, i0 + i), p.E, T(1));
        }
      }
      for (int64_t j = 0; j < p.Sk; ++j) {
        store_row(dk_acc.data() + j * p.E, dk.row(b, hk, j), p.E, T(1));
        store_row(dv_acc.data() + j * p.Ev, dv.row(b, hk, j), p.Ev, T(1));
      }
    }
  });
}

/** Calls f(S{}) for the storage type of a floating dtype the kernels take. */
template <class F> void dispatch_attention(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::BFloat16: return f(BFloat16{});
    case DType::Float16: return f(Half{});
    default: fail<TypeError>("[scaled_dot_product_attention] the CPU kernel takes floating inputs, got ", dtype);
  }
}

}  // namespace

void CpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                           double scale, const Tensor& out, const Tensor& lse) {
  if (out.numel() == 0) return;
  dispatch_attention(q.dtype(), [&]<class S>(S) {
    attention_impl<S>(isa_ != Isa::Generic, Problem<S>(q, k, v, mask, causal, scale, out), lse);
  });
}

void CpuBackend::attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask, bool causal, double scale, const Tensor& out, const Tensor& lse,
                                    const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  if (dq.numel() + dk.numel() + dv.numel() == 0) return;
  dispatch_attention(q.dtype(), [&]<class S>(S) {
    attention_backward_impl<S>(isa_ != Isa::Generic, Problem<S>(q, k, v, mask, causal, scale, out), g, lse, dq, dk, dv);
  });
}

}  // namespace ug::cpu
