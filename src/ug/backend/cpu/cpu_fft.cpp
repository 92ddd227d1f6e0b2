// The DFT kernels on FFTW's guru64 interface. Plans are made once per problem (kind,
// precision, sizes, strides, alignment) with FFTW_ESTIMATE and cached: FFTW's planner is not
// thread-safe, so planning and destroying happen under one mutex, while fftw_execute_dft on
// new arrays of the plan's layout and alignment may run in several threads at once.
#include "ug/backend/cpu/cpu_fft.h"

#include <fftw3.h>

#include <algorithm>
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

enum class Kind { C2C, R2C, C2R };

std::mutex planner_mutex;

using Iodims = std::vector<fftw_iodim64>;

/** FFTW's two precisions behind one interface; a plan is held as void*. */
template <bool Double> struct Fftw {
  using Real = std::conditional_t<Double, double, float>;
  using Complex = std::conditional_t<Double, fftw_complex, fftwf_complex>;
  using Plan = std::conditional_t<Double, fftw_plan, fftwf_plan>;

  static void* plan(Kind kind, int sign, const Iodims& dims, const Iodims& batch, void* in, void* out) {
    const int rank = static_cast<int>(dims.size()), hrank = static_cast<int>(batch.size());
    const unsigned flags = FFTW_ESTIMATE;  // ESTIMATE never writes to the arrays while planning
    auto* ci = static_cast<Complex*>(in);
    auto* co = static_cast<Complex*>(out);
    auto* ri = static_cast<Real*>(in);
    auto* ro = static_cast<Real*>(out);
    if constexpr (Double) {
      switch (kind) {
        case Kind::C2C: return fftw_plan_guru64_dft(rank, dims.data(), hrank, batch.data(), ci, co, sign, flags);
        case Kind::R2C: return fftw_plan_guru64_dft_r2c(rank, dims.data(), hrank, batch.data(), ri, co, flags);
        case Kind::C2R: return fftw_plan_guru64_dft_c2r(rank, dims.data(), hrank, batch.data(), ci, ro, flags);
      }
    } else {
      switch (kind) {
        case Kind::C2C: return fftwf_plan_guru64_dft(rank, dims.data(), hrank, batch.data(), ci, co, sign, flags);
        case Kind::R2C: return fftwf_plan_guru64_dft_r2c(rank, dims.data(), hrank, batch.data(), ri, co, flags);
        case Kind::C2R: return fftwf_plan_guru64_dft_c2r(rank, dims.data(), hrank, batch.data(), ci, ro, flags);
      }
    }
    return nullptr;
  }

  static void execute(Kind kind, void* plan, void* in, void* out) {
    auto p = static_cast<Plan>(plan);
    if constexpr (Double) {
      switch (kind) {
        case Kind::C2C: return fftw_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
        case Kind::R2C: return fftw_execute_dft_r2c(p, static_cast<Real*>(in), static_cast<Complex*>(out));
        case Kind::C2R: return fftw_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<Real*>(out));
      }
    } else {
      switch (kind) {
        case Kind::C2C: return fftwf_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
        case Kind::R2C: return fftwf_execute_dft_r2c(p, static_cast<Real*>(in), static_cast<Complex*>(out));
        case Kind::C2R: return fftwf_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<Real*>(out));
      }
    }
  }

  static void destroy(void* plan) {
    const std::lock_guard lock(planner_mutex);
    if constexpr (Double) fftw_destroy_plan(static_cast<Plan>(plan));
    else fftwf_destroy_plan(static_cast<Plan>(plan));
  }

  static int64_t alignment(void* p) {
    if constexpr (Double) return fftw_alignment_of(static_cast<Real*>(p));
    else return fftwf_alignment_of(static_cast<Real*>(p));
  }
};

using PlanKey = std::vector<int64_t>;
using PlanPtr = std::shared_ptr<void>;

/** The cached plan for this problem on arrays aligned as in and out are, made if new. */
template <bool Double>
PlanPtr plan_for(Kind kind, int sign, const Iodims& dims, const Iodims& batch, void* in, void* out) {
  using F = Fftw<Double>;
  PlanKey key{static_cast<int64_t>(kind), Double, sign, F::alignment(in), F::alignment(out)};
  for (const Iodims* list : {&dims, &batch}) {
    key.push_back(-1);  // separates the transform dims from the batch dims
    for (const fftw_iodim64& d : *list) key.insert(key.end(), {d.n, d.is, d.os});
  }
  static std::map<PlanKey, PlanPtr> cache;
  std::map<PlanKey, PlanPtr> dropped;  // destroyed after the lock is released (destroy locks it)
  const std::lock_guard lock(planner_mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  void* plan = F::plan(kind, sign, dims, batch, in, out);
  if (!plan) fail("[fft] FFTW could not plan a transform of ", dims.size(), " dims batched over ", batch.size());
  if (cache.size() >= 512) dropped.swap(cache);  // a bound on memory for programs of many shapes
  return cache[key] = PlanPtr(plan, &F::destroy);
}

/** The transform of in into out over `dims` (the sizes of `sized` there), batched over the
 *  other dims, the largest of them split across the thread pool. */
template <bool Double>
void transform(Kind kind, int sign, const Tensor& in, const Tensor& out, const Dims& dims, const Tensor& sized) {
  Iodims signal, batch;
  std::vector<bool> is_transform(in.dim(), false);
  for (int64_t d : dims) {
    is_transform[d] = true;
    signal.push_back({sized.size(d), in.stride(d), out.stride(d)});
  }
  int split = -1;  // the batch dim shared out among threads
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (is_transform[d] || in.size(d) == 1) continue;
    if (split < 0 || in.size(d) > batch[split].n) split = static_cast<int>(batch.size());
    batch.push_back({in.size(d), in.stride(d), out.stride(d)});
  }
  auto* in_data = static_cast<char*>(in.raw_data());
  auto* out_data = static_cast<char*>(out.raw_data());
  const auto in_item = static_cast<int64_t>(itemsize(in.dtype())),
             out_item = static_cast<int64_t>(itemsize(out.dtype()));
  if (split < 0) {
    Fftw<Double>::execute(kind, plan_for<Double>(kind, sign, signal, batch, in_data, out_data).get(), in_data,
                          out_data);
    return;
  }
  const fftw_iodim64 whole = batch[split];
  const int64_t per_item = out.numel() / whole.n;
  parallel_for(whole.n, std::max<int64_t>(1, 32768 / per_item), [&](int64_t begin, int64_t end) {
    Iodims part = batch;
    part[split].n = end - begin;
    char* src = in_data + begin * whole.is * in_item;
    char* dst = out_data + begin * whole.os * out_item;
    Fftw<Double>::execute(kind, plan_for<Double>(kind, sign, signal, part, src, dst).get(), src, dst);
  });
}

/** out *= scale, out contiguous. */
template <class Real> void rescale(const Tensor& out, double scale) {
  if (scale == 1.0) return;
  auto* data = static_cast<Real*>(out.raw_data());
  const auto s = static_cast<Real>(scale);
  const int64_t n = out.numel() * (is_complex(out.dtype()) ? 2 : 1);
  parallel_for(n, 65536, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) data[i] *= s;
  });
}

/** The upper half of a contiguous spectrum of shape `shape` along the last of `dims` from
 *  Hermitian symmetry: X[k] = conj(X[-k mod n]), k mirrored in each of `dims`. */
template <class C> void hermitian_fill(C* data, const Shape& shape, const Dims& dims) {
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t last = dims.back(), n = shape[last], half = n / 2 + 1;
  if (half >= n) return;
  const Strides strides = contiguous_strides(shape);
  std::vector<bool> mirrored(rank, false);
  for (int64_t d : dims) mirrored[d] = true;
  std::vector<int64_t> index(rank, 0);  // over every dim but `last`
  for (int64_t row = 0, rows = numel_of(shape) / n; row < rows; ++row) {
    int64_t at = 0, from = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == last) continue;
      at += index[d] * strides[d];
      from += (mirrored[d] ? (shape[d] - index[d]) % shape[d] : index[d]) * strides[d];
    }
    for (int64_t k = half; k < n; ++k) data[at + k * strides[last]] = std::conj(data[from + (n - k) * strides[last]]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (d == last) continue;
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

/** The in-place complex DFT along dim d of a contiguous array of this shape. Rows (d last) go
 *  to one batched plan; other dims in blocks of columns copied into rows, transformed and
 *  copied back, because FFTW_ESTIMATE's plans for strided transforms run several times slower
 *  (256 x 256 complex64 columns: 360 us against 47 us for the rows). */
template <bool Double> void c2c_pass(void* array, const Shape& shape, int64_t d, int sign) {
  using C = std::complex<typename Fftw<Double>::Real>;
  auto* data = static_cast<C*>(array);
  const int64_t n = shape[d];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (i != d) (i < d ? outer : inner) *= shape[i];
  if (n == 1 || outer * inner == 0) return;  // a one-point DFT is the identity
  auto rows = [&](C* p, int64_t count) {
    const Iodims signal{{n, 1, 1}}, batch{{count, n, n}};
    Fftw<Double>::execute(Kind::C2C, plan_for<Double>(Kind::C2C, sign, signal, batch, p, p).get(), p, p);
  };
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, 32768 / n), [&](int64_t b, int64_t e) { rows(data + b * n, e - b); });
    return;
  }
  constexpr int64_t kBlock = 16;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(outer * blocks, std::max<int64_t>(1, 32768 / (n * kBlock)), [&](int64_t b, int64_t e) {
    std::vector<C> buffer(kBlock * n);
    for (int64_t task = b; task < e; ++task) {
      const int64_t first = (task % blocks) * kBlock, width = std::min(kBlock, inner - first);
      C* column = data + (task / blocks) * n * inner + first;
      for (int64_t k = 0; k < n; ++k)
        for (int64_t c = 0; c < width; ++c) buffer[c * n + k] = column[k * inner + c];
      rows(buffer.data(), width);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t c = 0; c < width; ++c) column[k * inner + c] = buffer[c * n + k];
    }
  });
}

template <bool Double> void c2c(const Tensor& in, const Tensor& out, const Dims& dims, int sign, double scale) {
  // Rows straight from in; anything else copied into out (a rank-0 FFTW transform) and
  // transformed there one dim at a time.
  if (dims.size() == 1 && in.stride(dims[0]) == 1 && out.stride(dims[0]) == 1) {
    transform<Double>(Kind::C2C, sign, in, out, dims, in);
  } else {
    transform<Double>(Kind::C2C, sign, in, out, {}, in);
    for (int64_t d : dims) c2c_pass<Double>(out.raw_data(), out.shape(), d, sign);
  }
  rescale<typename Fftw<Double>::Real>(out, scale);
}

template <bool Double> void r2c(const Tensor& in, const Tensor& out, const Dims& dims, bool onesided, double scale) {
  using C = std::complex<typename Fftw<Double>::Real>;
  // The passes over the other dims read every column of a two-sided out: the half that the
  // Hermitian fill writes afterwards starts as zeros, not as uninitialised memory.
  if (!onesided && dims.size() > 1) std::fill_n(static_cast<C*>(out.raw_data()), out.numel(), C{});
  // FFTW writes the first n/2 + 1 outputs along the last dim at out's strides.
  transform<Double>(Kind::R2C, FFTW_FORWARD, in, out, {dims.back()}, in);
  for (size_t i = 0; i + 1 < dims.size(); ++i) c2c_pass<Double>(out.raw_data(), out.shape(), dims[i], FFTW_FORWARD);
  if (!onesided) hermitian_fill(static_cast<C*>(out.raw_data()), out.shape(), dims);
  rescale<typename Fftw<Double>::Real>(out, scale);
}

template <bool Double> void c2r(const Tensor& in, const Tensor& out, const Dims& dims, double scale) {
  // The inverse over the other dims first, in the scratch copy, then the real one over the last.
  for (size_t i = 0; i + 1 < dims.size(); ++i) c2c_pass<Double>(in.raw_data(), in.shape(), dims[i], FFTW_BACKWARD);
  transform<Double>(Kind::C2R, FFTW_BACKWARD, in, out, {dims.back()}, out);
  rescale<typename Fftw<Double>::Real>(out, scale);
}

bool is_double(const Tensor& t) { return t.dtype() == DType::Complex128 || t.dtype() == DType::Float64; }

}  // namespace

void fft_c2c(const Tensor& in, const Tensor& out, const Dims& dims, bool forward, double scale) {
  if (out.numel() == 0) return;
  const int sign = forward ? FFTW_FORWARD : FFTW_BACKWARD;
  if (is_double(in)) c2c<true>(in, out, dims, sign, scale);
  else c2c<false>(in, out, dims, sign, scale);
}

void fft_r2c(const Tensor& in, const Tensor& out, const Dims& dims, bool onesided, double scale) {
  if (out.numel() == 0) return;
  if (is_double(in)) r2c<true>(in, out, dims, onesided, scale);
  else r2c<false>(in, out, dims, onesided, scale);
}

void fft_c2r(const Tensor& in, const Tensor& out, const Dims& dims, double scale) {
  if (out.numel() == 0) return;
  if (is_double(in)) c2r<true>(in, out, dims, scale);
  else c2r<false>(in, out, dims, scale);
}

}  // namespace ug::cpu
