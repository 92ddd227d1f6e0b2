// Elementwise kernels: copy/cast, fill, unary, binary, where. Compiled once per ISA
// (UG_CPU_ISA names the namespace); inner loops take unit-stride and broadcast fast paths
// that the compiler vectorises.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#include "ug/backend/cpu/kernels.h"
#include "ug/backend/cpu/loops.h"
#include "ug/backend/cpu/vector_math.h"
#include "ug/core/error.h"

namespace ug::cpu::UG_CPU_ISA {
namespace {

/** A cast as PyTorch's: complex to real keeps the real part, real to complex has no imaginary part. */
template <class R, class T> inline R convert(T v) {
  if constexpr (std::is_same_v<R, bool>) return static_cast<acc_t<T>>(v) != acc_t<T>(0);
  else if constexpr (is_complex_v<R> && is_complex_v<T>) return R(v);
  else if constexpr (is_complex_v<R>) return R(static_cast<typename R::value_type>(static_cast<acc_t<T>>(v)));
  else if constexpr (is_complex_v<T>) return convert<R>(v.real());
  else return static_cast<R>(static_cast<acc_t<R>>(static_cast<acc_t<T>>(v)));
}

template <class R, class T> void copy_typed(const Tensor& src, const Tensor& dst) {
  StridedLoop<2> loop({&dst, &src});
  loop.run_parallel([](char** p, const int64_t* s, int64_t n) {
    R* o = reinterpret_cast<R*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
      if constexpr (std::is_same_v<R, T>) {
        std::memcpy(o, a, static_cast<size_t>(n) * sizeof(T));
      } else {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) o[i] = convert<R>(a[i]);
      }
    } else if (s[0] == sizeof(R) && s[1] == 0) {
      R v = convert<R>(*a);
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<R*>(p[0] + i * s[0]) = convert<R>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
    }
  });
}

// 16-bit floats: a contiguous run is widened to float32 a block at a time, computed by the
// float loop (which vectorises) and rounded back to nearest even; converting element by
// element through Half/BFloat16 would not vectorise.
template <class T> inline constexpr bool is_16bit_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
constexpr int64_t kBlock = 256;

inline void widen(const Half* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = in[i];
}
inline void narrow(const float* in, Half* out, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) out[i] = Half(in[i]);
}
inline void widen(const BFloat16* in, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(in[i].bits) << 16;
    std::memcpy(out + i, &bits, 4);
  }
}
inline void narrow(const float* in, BFloat16* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, in + i, 4);
    const bool nan = (x & 0x7fffffffu) > 0x7f800000u;
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    out[i].bits = static_cast<uint16_t>(nan ? (x >> 16) | 0x40u : rounded);
  }
}

/** out[i] = f(float(a[i])) over a contiguous run of a 16-bit float input. */
template <class R, class T, class F> void blocked_unary(const T* a, R* o, int64_t n, F f) {
  float buf[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    widen(a + i0, buf, m);
    if constexpr (std::is_same_v<R, T>) {
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) buf[j] = f(buf[j]);
      narrow(buf, o + i0, m);
    } else {
      for (int64_t j = 0; j < m; ++j) o[i0 + j] = static_cast<R>(f(buf[j]));
    }
  }
}

/** out[i] = f(float(a[i]), float(b[i])); a_step / b_step are 1 or 0 (a broadcast scalar). */
template <class R, class T, class F>
void blocked_binary(const T* a, int64_t a_step, const T* b, int64_t b_step, R* o, int64_t n, F f) {
  float x[kBlock], y[kBlock];
  const float xs = static_cast<float>(a[0]), ys = static_cast<float>(b[0]);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    if (a_step) widen(a + i0, x, m);
    else std::fill(x, x + m, xs);
    if (b_step) widen(b + i0, y, m);
    else std::fill(y, y + m, ys);
    if constexpr (std::is_same_v<R, T>) {
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) x[j] = f(x[j], y[j]);
      narrow(x, o + i0, m);
    } else {
      for (int64_t j = 0; j < m; ++j) o[i0 + j] = static_cast<R>(f(x[j], y[j]));
    }
  }
}

#if defined(__AVX2__)
/** Runs longer than this write their results with non-temporal stores: the output would not
 *  stay in cache anyway, and streaming it skips reading each destination line first. */
constexpr int64_t kStreamingRun = int64_t{1} << 20;

/** o[i] = f(a[i]) for a long float run: computed a block at a time into L1, then streamed. */
template <class F> void streamed_unary(const float* a, float* o, int64_t n, F f) {
  int64_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(o + i) & 31) != 0; ++i) o[i] = f(a[i]);
  alignas(32) float buf[kBlock];
  for (; i + kBlock <= n; i += kBlock) {
#pragma omp simd
    for (int64_t j = 0; j < kBlock; ++j) buf[j] = f(a[i + j]);
    for (int64_t j = 0; j < kBlock; j += 8) _mm256_stream_ps(o + i + j, _mm256_load_ps(buf + j));
  }
  for (; i < n; ++i) o[i] = f(a[i]);
  _mm_sfence();
}
#endif

template <class Op, class T, class R> void unary_typed(const Tensor& x, const Tensor& out) {
  StridedLoop<2> loop({&out, &x});
  loop.run_parallel([](char** p, const int64_t* s, int64_t n) {
    R* o = reinterpret_cast<R*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
      if constexpr (is_16bit_float_v<T>) {
        blocked_unary(a, o, n, [](float v) { return Op::f(v); });
        return;
      }
#if defined(__AVX2__)
      if constexpr (std::is_same_v<T, float> && std::is_same_v<R, float>) {
        if (n >= kStreamingRun) {
          streamed_unary(a, o, n, [](float v) { return Op::f(v); });
          return;
        }
      }
#endif
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<R>(Op::f(static_cast<acc_t<T>>(a[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<R*>(p[0] + i * s[0]) =
            static_cast<R>(Op::f(static_cast<acc_t<T>>(*reinterpret_cast<const T*>(p[1] + i * s[1]))));
    }
  });
}

template <class Op, class T, class R> void binary_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  StridedLoop<3> loop({&out, &a, &b});
  loop.run_parallel([](char** p, const int64_t* s, int64_t n) {
    using A = acc_t<T>;
    R* o = reinterpret_cast<R*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    constexpr int64_t sz = sizeof(T), rz = sizeof(R);
    if constexpr (is_16bit_float_v<T>) {
      const bool a_ok = s[1] == sz || s[1] == 0, b_ok = s[2] == sz || s[2] == 0;
      if (s[0] == rz && a_ok && b_ok) {
        blocked_binary(x, s[1] != 0, y, s[2] != 0, o, n, [](float u, float v) { return Op::f(u, v); });
        return;
      }
    }
    if (s[0] == rz && s[1] == sz && s[2] == sz) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<R>(Op::f(static_cast<A>(x[i]), static_cast<A>(y[i])));
    } else if (s[0] == rz && s[1] == sz && s[2] == 0) {
      const A yv = static_cast<A>(*y);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<R>(Op::f(static_cast<A>(x[i]), yv));
    } else if (s[0] == rz && s[1] == 0 && s[2] == sz) {
      const A xv = static_cast<A>(*x);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<R>(Op::f(xv, static_cast<A>(y[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<R*>(p[0] + i * s[0]) =
            static_cast<R>(Op::f(static_cast<A>(*reinterpret_cast<const T*>(p[1] + i * s[1])),
                                 static_cast<A>(*reinterpret_cast<const T*>(p[2] + i * s[2]))));
    }
  });
}

template <class T> void where_typed(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  StridedLoop<4> loop({&out, &cond, &a, &b});
  loop.run_parallel([](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t sz = sizeof(T);
    T* o = reinterpret_cast<T*>(p[0]);
    const uint8_t* c = reinterpret_cast<const uint8_t*>(p[1]);
    const T* x = reinterpret_cast<const T*>(p[2]);
    const T* y = reinterpret_cast<const T*>(p[3]);
    // Contiguous runs (one side maybe a broadcast scalar, as in relu's backward) select
    // without branches, so they vectorise; both sides are read, which is always in bounds.
    if (s[0] == sz && s[1] == 1 && (s[2] == sz || s[2] == 0) && (s[3] == sz || s[3] == 0)) {
      const int64_t xs = s[2] ? 1 : 0, ys = s[3] ? 1 : 0;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) {
        const T xv = x[i * xs], yv = y[i * ys];
        o[i] = c[i] ? xv : yv;
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
      *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(p[c ? 2 : 3] + i * s[c ? 2 : 3]);
    }
  });
}

/** The complex product (ar br - ai bi) + i (ar bi + ai br), as torch's kernel computes it (no
 *  recovery of infinities, unlike C's Annex G). */
struct ComplexMul {
  template <class F> static void f(F ar, F ai, F br, F bi, F& re, F& im) {
    re = ar * br - ai * bi;
    im = ar * bi + ai * br;
  }
};

/** The complex quotient by Smith's algorithm, as torch's c10::complex and NumPy compute it: the
 *  divisor's smaller part over its larger keeps every intermediate in range where |b|^2 would
 *  overflow or underflow. A zero divisor gives each part over |0| (inf or nan), as theirs do. */
struct ComplexDiv {
  template <class F> static void f(F ar, F ai, F br, F bi, F& re, F& im) {
    const F abr = std::abs(br), abi = std::abs(bi);
    const bool real_big = abr >= abi;
    const F big = real_big ? br : bi, small = real_big ? bi : br, u = real_big ? ar : ai, v = real_big ? ai : ar;
    const F rat = small / big, scl = F(1) / (big + small * rat);
    const F r = (u + v * rat) * scl, i = (real_big ? v - u * rat : u * rat - v) * scl;
    const bool zero = abr == F(0) && abi == F(0);
    re = zero ? ar / abr : r;
    im = zero ? ai / abi : i;
  }
};

/** A complex binary kernel over F = float or double parts: Op::f per element. */
template <class Op, class F> void complex_binary_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  StridedLoop<3> loop({&out, &a, &b});
  loop.run_parallel([](char** p, const int64_t* s, int64_t n) {
    F* o = reinterpret_cast<F*>(p[0]);
    const F* x = reinterpret_cast<const F*>(p[1]);
    const F* y = reinterpret_cast<const F*>(p[2]);
    // Strides in parts (2 a complex number; 0 where an operand is broadcast).
    const int64_t so = s[0] / int64_t{sizeof(F)}, sx = s[1] / int64_t{sizeof(F)}, sy = s[2] / int64_t{sizeof(F)};
    if (so == 2 && sx == 2 && sy == 2) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) Op::f(x[2 * i], x[2 * i + 1], y[2 * i], y[2 * i + 1], o[2 * i], o[2 * i + 1]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) Op::f(x[i * sx], x[i * sx + 1], y[i * sy], y[i * sy + 1], o[i * so], o[i * so + 1]);
  });
}

/** |x + iy| as hypot computes it, the larger part factored out: M sqrt(1 + (m/M)^2) squares
 *  nothing that could overflow or underflow. An infinite part gives inf even beside a NaN. */
template <class F> inline F complex_abs(F x, F y) {
  const F ax = std::abs(x), ay = std::abs(y);
  const bool x_big = ax >= ay;
  const F big = x_big ? ax : ay, small = x_big ? ay : ax, r = small / big;
  const F scaled = big * std::sqrt(F(1) + r * r);
  const F inf = std::numeric_limits<F>::infinity();
  // big = 0 makes r 0/0: |z| is then small, 0 or (beside a 0) a NaN
  return ax == inf || ay == inf ? inf : big == F(0) ? small : scaled;
}

template <class F> void complex_abs_typed(const Tensor& z, const Tensor& out) {
  StridedLoop<2> loop({&out, &z});
  loop.run_parallel([](char** p, const int64_t* s, int64_t n) {
    F* o = reinterpret_cast<F*>(p[0]);
    const F* x = reinterpret_cast<const F*>(p[1]);
    // Strides in parts (1 a real number, 2 a complex one).
    const int64_t so = s[0] / int64_t{sizeof(F)}, sx = s[1] / int64_t{sizeof(F)};
    if (so == 1 && sx == 2) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = complex_abs(x[2 * i], x[2 * i + 1]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i * so] = complex_abs(x[i * sx], x[i * sx + 1]);
  });
}

template <class Op> void unary_dispatch(const Tensor& x, const Tensor& out) {
  if constexpr (std::is_same_v<Op, ops::Abs>) {  // complex |z|, a real result (ops/complex.cpp)
    if (x.dtype() == DType::Complex64) return complex_abs_typed<float>(x, out);
    if (x.dtype() == DType::Complex128) return complex_abs_typed<double>(x, out);
  }
  if constexpr (Op::rule == ops::UnaryRule::Floating) {
    UG_DISPATCH_FLOATING(x.dtype(), Op::name, (unary_typed<Op, scalar_t, scalar_t>(x, out)));
  } else if constexpr (Op::rule == ops::UnaryRule::Predicate) {
    UG_DISPATCH_ALL(x.dtype(), Op::name, (unary_typed<Op, scalar_t, bool>(x, out)));
  } else if constexpr (Op::rule == ops::UnaryRule::Bitwise) {
    UG_DISPATCH_INTEGRAL_AND_BOOL(x.dtype(), Op::name, (unary_typed<Op, scalar_t, scalar_t>(x, out)));
  } else if constexpr (Op::rule == ops::UnaryRule::SameOrBool) {
    UG_DISPATCH_ALL(x.dtype(), Op::name, (unary_typed<Op, scalar_t, scalar_t>(x, out)));
  } else {
    UG_DISPATCH_NUMERIC(x.dtype(), Op::name, (unary_typed<Op, scalar_t, scalar_t>(x, out)));
  }
}

template <class Op> void binary_dispatch(const Tensor& a, const Tensor& b, const Tensor& out) {
  // the complex product and quotient (ops/complex.cpp)
  if constexpr (std::is_same_v<Op, ops::Mul> || std::is_same_v<Op, ops::Div>) {
    using Kernel = std::conditional_t<std::is_same_v<Op, ops::Mul>, ComplexMul, ComplexDiv>;
    if (out.dtype() == DType::Complex64) return complex_binary_typed<Kernel, float>(a, b, out);
    if (out.dtype() == DType::Complex128) return complex_binary_typed<Kernel, double>(a, b, out);
  }
  if constexpr (Op::rule == ops::BinaryRule::TrueDivide) {
    UG_DISPATCH_FLOATING(a.dtype(), Op::name, (binary_typed<Op, scalar_t, scalar_t>(a, b, out)));
  } else if constexpr (Op::rule == ops::BinaryRule::Compare) {
    UG_DISPATCH_ALL(a.dtype(), Op::name, (binary_typed<Op, scalar_t, bool>(a, b, out)));
  } else if constexpr (Op::rule == ops::BinaryRule::Bitwise) {
    UG_DISPATCH_INTEGRAL_AND_BOOL(a.dtype(), Op::name, (binary_typed<Op, scalar_t, scalar_t>(a, b, out)));
  } else {
    UG_DISPATCH_ALL(a.dtype(), Op::name, (binary_typed<Op, scalar_t, scalar_t>(a, b, out)));
  }
}

}  // namespace

void copy(const Tensor& src, const Tensor& dst) {
  UG_DISPATCH_ALL_AND_SHELLS(dst.dtype(), "copy", {
    using R = scalar_t;
    UG_DISPATCH_ALL_AND_SHELLS(src.dtype(), "copy", (copy_typed<R, scalar_t>(src, dst)));
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  UG_DISPATCH_ALL_AND_SHELLS(dst.dtype(), "fill", {
    const scalar_t v = value.to<scalar_t>();
    StridedLoop<1> loop({&dst});
    loop.run_parallel([v](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(scalar_t)) {
        scalar_t* o = reinterpret_cast<scalar_t*>(p[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = v;
      }
    });
  });
}

void unary(ops::UnaryOp op, const Tensor& x, const Tensor& out) {
  switch (op) {
#define UG_CASE(Op, method) \
  case ops::UnaryOp::Op: return unary_dispatch<ops::Op>(x, out);
    UG_UNARY_ALL(UG_CASE)
#undef UG_CASE
  }
}

void binary(ops::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (op) {
#define UG_CASE(Op, method) \
  case ops::BinaryOp::Op: return binary_dispatch<ops::Op>(a, b, out);
    UG_BINARY_ALL(UG_CASE)
#undef UG_CASE
  }
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (itemsize(out.dtype())) {
    case 1: return where_typed<uint8_t>(cond, a, b, out);
    case 2: return where_typed<uint16_t>(cond, a, b, out);
    case 4: return where_typed<uint32_t>(cond, a, b, out);
    case 8: return where_typed<uint64_t>(cond, a, b, out);
    default: return where_typed<std::complex<double>>(cond, a, b, out);
  }
}

}  // namespace ug::cpu::UG_CPU_ISA
