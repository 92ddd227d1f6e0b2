// torch.fft's functions over the three primitives (fft_ops.cpp): argument rules (torch's
// canonicalisation of s and dim), promotion, zero-padding or trimming to the signal sizes,
// and the norm modes; the Hermitian transforms are the real ones conjugated.
#include "ug/ops/fft.h"

#include <algorithm>
#include <string>

#include "ug/ops/binary.h"
#include "ug/ops/complex.h"

namespace ug::fft {

namespace {

/** x as a transform takes it: integers become the default float dtype; complex: a real x
 *  becomes complex. */
Tensor promoted(const Tensor& x, bool complex, const char* fname) {
  Tensor t = x;
  if (is_integral(x.dtype(), true)) t = x.to(get_default_dtype());
  const DType dt = t.dtype();
  if (dt != DType::Float32 && dt != DType::Float64 && dt != DType::Complex64 && dt != DType::Complex128)
    fail<TypeError>("[", fname, "] unsupported dtype ", x.dtype(),
                    " (float32, float64, complex64, complex128 or an integer type expected)");
  return complex && !is_complex(dt) ? t.to(to_complex(dt)) : t;
}

Tensor real_input(const Tensor& x, const char* fname) {
  if (is_complex(x.dtype()))
    fail<TypeError>("[", fname, "] expects a real input tensor, but got ", x.dtype(), " (shape ", x.shape(), ")");
  return promoted(x, false, fname);
}

/** The primitive's scale for a mode: "backward" scales the inverse, "forward" the forward. */
Norm norm_of(NormMode mode, bool forward, const char* fname) {
  const std::string_view m = mode.value_or("backward");
  if (m == "backward") return forward ? Norm::None : Norm::ByN;
  if (m == "forward") return forward ? Norm::ByN : Norm::None;
  if (m == "ortho") return Norm::ByRootN;
  fail<ValueError>("[", fname, "] invalid normalization mode \"", std::string(m),
                   "\" (expected \"backward\", \"ortho\" or \"forward\")");
}

void check_points(int64_t n, const char* fname) {
  if (n < 1) fail<ValueError>("[", fname, "] invalid number of data points (", n, ") specified");
}

/** The transformed dims and the signal's size along each: torch's rules for s and dim. */
struct Signal {
  Dims dims, sizes;
};

Signal canonical(const Tensor& x, const OptDims& s, const OptDims& dim, const char* fname) {
  Signal sig;
  if (dim) {
    for (int64_t d : *dim) sig.dims.push_back(wrap_dim(d, x.dim(), fname));
    Dims sorted = sig.dims;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      fail<ValueError>("[", fname, "] FFT dims must be unique (dim ", shape_str(*dim), ")");
    if (s && s->size() != dim->size())
      fail<ValueError>("[", fname, "] s and dim must have the same length when both are given (s ", shape_str(*s),
                       ", dim ", shape_str(*dim), ")");
  } else if (s) {
    if (static_cast<int64_t>(s->size()) > x.dim())
      fail<ValueError>("[", fname, "] s has ", s->size(), " values but the input has only ", x.dim(), " dims (shape ",
                       x.shape(), ")");
    for (int64_t d = x.dim() - static_cast<int64_t>(s->size()); d < x.dim(); ++d) sig.dims.push_back(d);
  } else {
    for (int64_t d = 0; d < x.dim(); ++d) sig.dims.push_back(d);
  }
  if (sig.dims.empty()) fail<ValueError>("[", fname, "] must transform at least one dim (input shape ", x.shape(), ")");
  for (size_t i = 0; i < sig.dims.size(); ++i) {
    const int64_t n = s && (*s)[i] != -1 ? (*s)[i] : x.size(sig.dims[i]);
    check_points(n, fname);
    sig.sizes.push_back(n);
  }
  return sig;
}

Tensor resized(Tensor x, const Signal& sig) {
  for (size_t i = 0; i < sig.dims.size(); ++i) x = detail::resized(x, sig.dims[i], sig.sizes[i]);
  return x;
}

Dims all_but_last(const Dims& dims) { return Dims(dims.begin(), dims.end() - 1); }

/** fftn (forward) and ifftn; a real input's by the real transform, two-sided (its ifft is
 *  the conjugate of its fft). */
Tensor c2c(const char* fname, const Tensor& x, const OptDims& s, const OptDims& dim, NormMode norm, bool forward) {
  const Tensor in = promoted(x, false, fname);
  const Signal sig = canonical(in, s, dim, fname);
  const Norm nm = norm_of(norm, forward, fname);
  if (is_complex(in.dtype())) return fft_c2c(resized(in, sig), sig.dims, nm, forward);
  const Tensor y = fft_r2c(resized(in, sig), sig.dims, nm, false);
  return forward ? y : conj(y);
}

/** rfftn (forward) and ihfftn, the conjugate of a real signal's half-spectrum. */
Tensor r2c(const char* fname, const Tensor& x, const OptDims& s, const OptDims& dim, NormMode norm, bool forward) {
  const Tensor in = real_input(x, fname);
  const Signal sig = canonical(in, s, dim, fname);
  const Norm nm = norm_of(norm, forward, fname);
  if (forward) return fft_r2c(resized(in, sig), sig.dims, nm, true);
  // For a real x, ifft(x) = conj(fft(x)): the conjugated half over the last dim, then the
  // inverse over the others.
  const Tensor half = conj(fft_r2c(resized(in, sig), {sig.dims.back()}, nm, true));
  return sig.dims.size() == 1 ? half : fft_c2c(half, all_but_last(sig.dims), nm, false);
}

/** irfftn (inverse) and hfftn (forward). */
Tensor c2r(const char* fname, const Tensor& x, const OptDims& s, const OptDims& dim, NormMode norm, bool forward) {
  const Tensor in = promoted(x, true, fname);
  Signal sig = canonical(in, s, dim, fname);
  const int64_t last = sig.dims.back();
  const int64_t n = s && s->back() != -1 ? s->back() : 2 * (in.size(last) - 1);
  check_points(n, fname);
  sig.sizes.back() = n / 2 + 1;
  const Norm nm = norm_of(norm, forward, fname);
  // The DFT of a Hermitian signal is real, so equal to its conjugate: the inverse DFT of the
  // conjugate signal, whose half is the conjugate half.
  const Tensor half = resized(in, sig);
  return fft_c2r(forward ? conj(half) : half, sig.dims, nm, n);
}

/** The s and dim of a one-dim transform; n (if given) checked here, where -1 is no default. */
OptDims one_size(std::optional<int64_t> n, const char* fname) {
  if (!n) return std::nullopt;
  check_points(*n, fname);
  return Dims{*n};
}

}  // namespace

Tensor fft(const Tensor& x, std::optional<int64_t> n, int64_t dim, NormMode norm) {
  return c2c("fft.fft", x, one_size(n, "fft.fft"), Dims{dim}, norm, true);
}
Tensor ifft(const Tensor& x, std::optional<int64_t> n, int64_t dim, NormMode norm) {
  return c2c("fft.ifft", x, one_size(n, "fft.ifft"), Dims{dim}, norm, false);
}
Tensor rfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, NormMode norm) {
  return r2c("fft.rfft", x, one_size(n, "fft.rfft"), Dims{dim}, norm, true);
}
Tensor irfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, NormMode norm) {
  return c2r("fft.irfft", x, one_size(n, "fft.irfft"), Dims{dim}, norm, false);
}
Tensor hfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, NormMode norm) {
  return c2r("fft.hfft", x, one_size(n, "fft.hfft"), Dims{dim}, norm, true);
}
Tensor ihfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, NormMode norm) {
  return r2c("fft.ihfft", x, one_size(n, "fft.ihfft"), Dims{dim}, norm, false);
}

Tensor fft2(const Tensor& x, OptDims s, const Dims& dim, NormMode norm) {
  return c2c("fft.fft2", x, s, dim, norm, true);
}
Tensor ifft2(const Tensor& x, OptDims s, const Dims& dim, NormMode norm) {
  return c2c("fft.ifft2", x, s, dim, norm, false);
}
Tensor rfft2(const Tensor& x, OptDims s, const Dims& dim, NormMode norm) {
  return r2c("fft.rfft2", x, s, dim, norm, true);
}
Tensor irfft2(const Tensor& x, OptDims s, const Dims& dim, NormMode norm) {
  return c2r("fft.irfft2", x, s, dim, norm, false);
}
Tensor hfft2(const Tensor& x, OptDims s, const Dims& dim, NormMode norm) {
  return c2r("fft.hfft2", x, s, dim, norm, true);
}
Tensor ihfft2(const Tensor& x, OptDims s, const Dims& dim, NormMode norm) {
  return r2c("fft.ihfft2", x, s, dim, norm, false);
}

Tensor fftn(const Tensor& x, OptDims s, OptDims dim, NormMode norm) { return c2c("fft.fftn", x, s, dim, norm, true); }
Tensor ifftn(const Tensor& x, OptDims s, OptDims dim, NormMode norm) {
  return c2c("fft.ifftn", x, s, dim, norm, false);
}
Tensor rfftn(const Tensor& x, OptDims s, OptDims dim, NormMode norm) { return r2c("fft.rfftn", x, s, dim, norm, true); }
Tensor irfftn(const Tensor& x, OptDims s, OptDims dim, NormMode norm) {
  return c2r("fft.irfftn", x, s, dim, norm, false);
}
Tensor hfftn(const Tensor& x, OptDims s, OptDims dim, NormMode norm) { return c2r("fft.hfftn", x, s, dim, norm, true); }
Tensor ihfftn(const Tensor& x, OptDims s, OptDims dim, NormMode norm) {
  return r2c("fft.ihfftn", x, s, dim, norm, false);
}

namespace {

/** k / (d n) for k = 0, 1, ..., count - 1, the upper half (k >= wrap) less n first. */
Tensor frequencies(int64_t n, int64_t count, int64_t wrap, double d, Options opts, const char* fname) {
  if (n < 0) fail<ValueError>("[", fname, "] n must be non-negative, got ", n);
  const DType dtype = opts.dtype.value_or(get_default_dtype());
  const Tensor k = arange(count, {.dtype = DType::Float64, .device = opts.device});
  const Tensor f = where(k >= static_cast<double>(wrap), k - static_cast<double>(n), k);
  return (f / (static_cast<double>(n) * d)).to(dtype);
}

Tensor shifted(const Tensor& x, const OptDims& dim, bool inverse) {
  Dims dims, shifts;
  if (dim) dims = *dim;
  else
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  for (int64_t d : dims) {
    const int64_t size = x.size(wrap_dim(d, x.dim(), inverse ? "fft.ifftshift" : "fft.fftshift"));
    shifts.push_back(inverse ? (size + 1) / 2 : size / 2);
  }
  return dims.empty() ? x : x.roll(shifts, dims);
}

}  // namespace

Tensor fftfreq(int64_t n, double d, Options opts) { return frequencies(n, n, (n + 1) / 2, d, opts, "fft.fftfreq"); }
Tensor rfftfreq(int64_t n, double d, Options opts) {
  return frequencies(n, n / 2 + 1, n / 2 + 1, d, opts, "fft.rfftfreq");
}
Tensor fftshift(const Tensor& x, OptDims dim) { return shifted(x, dim, false); }
Tensor ifftshift(const Tensor& x, OptDims dim) { return shifted(x, dim, true); }

}  // namespace ug::fft
