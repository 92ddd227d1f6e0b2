// The three FFT primitives (torch's _fft_c2c, _fft_r2c, _fft_c2r), each defined once: its
// shape rule, the FFTW kernel, its derivatives (each linear, so the jvp is the op itself and
// the vjp another of the three), its batching rule and its replay in a compiled program.
#include <cmath>

#include "ug/backend/cpu/cpu_fft.h"
#include "ug/core/batching.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/fft.h"
#include "ug/ops/join.h"

namespace ug::fft {

namespace {

const graph::OpDef kC2C("fft_c2c"), kR2C("fft_r2c"), kC2R("fft_c2r");

/** dims as x's, each in [0, x.dim()) (a primitive is called with checked dims). */
Dims wrapped(const Dims& dims, int64_t ndim, const char* op) {
  Dims out;
  for (int64_t d : dims) out.push_back(wrap_dim(d, ndim, op));
  return out;
}

/** The dims of the physical tensor of a batched operand: one more in front. */
Dims shifted(const Dims& dims) {
  Dims out;
  for (int64_t d : dims) out.push_back(d + 1);
  return out;
}

double scale_of(Norm norm, const Tensor& signal, const Dims& dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(signal.size(d));
  switch (norm) {
    case Norm::None: break;
    case Norm::ByRootN: return 1.0 / std::sqrt(n);
    case Norm::ByN: return 1.0 / n;
  }
  return 1.0;
}

}  // namespace

namespace detail {

Tensor resized(const Tensor& x, int64_t dim, int64_t n) {
  const int64_t size = x.size(dim);
  if (n <= size) return n == size ? x : x.narrow(dim, 0, n);
  // pad() pads on the real view of a complex x; its pairs run from the last dim back to dim.
  const Tensor r = is_complex(x.dtype()) ? view_as_real(x) : x;
  Dims pads(2 * (r.dim() - dim), 0);
  pads.back() = n - size;
  const Tensor padded = pad(r, pads);
  return is_complex(x.dtype()) ? view_as_complex(padded) : padded;
}

}  // namespace detail

Tensor fft_c2c(const Tensor& x, const Dims& dims_in, Norm norm, bool forward) {
  const Dims dims = wrapped(dims_in, x.dim(), "fft_c2c");
  graph::OpCall call(kC2C);
  Tensor y;
  if (const int lvl = batching::level(x)) {
    y = batching::wrap(fft_c2c(batching::physical(x, lvl), shifted(dims), norm, forward), lvl);
  } else {
    y = empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
    cpu::fft_c2c(x, y, dims, forward, scale_of(norm, x, dims));
  }
  if (call.capturing())
    call.set_replay(
        [dims, norm, forward](const graph::Tensors& in) { return graph::Tensors{fft_c2c(in[0], dims, norm, forward)}; },
        graph::ReplaySizes::None);
  // The adjoint of a DFT is the DFT the other way with the same scale.
  call.finish(
      {&x}, {&y}, {},
      [dims, norm, forward](graph::Saved, graph::Tensors&& g) {
        return graph::Tensors{fft_c2c(g[0], dims, norm, !forward)};
      },
      [&](const graph::Tensors& t) { return graph::Tensors{fft_c2c(t[0], dims, norm, forward)}; });
  return y;
}

Tensor fft_r2c(const Tensor& x, const Dims& dims_in, Norm norm, bool onesided) {
  const Dims dims = wrapped(dims_in, x.dim(), "fft_r2c");
  const int64_t last = dims.back(), n = x.size(last);
  graph::OpCall call(kR2C);
  Tensor y;
  if (const int lvl = batching::level(x)) {
    y = batching::wrap(fft_r2c(batching::physical(x, lvl), shifted(dims), norm, onesided), lvl);
  } else {
    Shape shape = x.shape();
    if (onesided) shape[last] = n / 2 + 1;
    y = empty(shape, {.dtype = to_complex(x.dtype()), .device = x.device()});
    cpu::fft_r2c(x, y, dims, onesided, scale_of(norm, x, dims));
  }
  if (call.capturing())
    call.set_replay([dims, norm, onesided](
                        const graph::Tensors& in) { return graph::Tensors{fft_r2c(in[0], dims, norm, onesided)}; },
                    graph::ReplaySizes::None);
  // The adjoint: the inverse DFT of the gradient, the half that was dropped taken as zeros.
  call.finish(
      {&x}, {&y}, {},
      [dims, norm, last, n](graph::Saved, graph::Tensors&& g) {
        return graph::Tensors{real(fft_c2c(detail::resized(g[0], last, n), dims, norm, false))};
      },
      [&](const graph::Tensors& t) { return graph::Tensors{fft_r2c(t[0], dims, norm, onesided)}; });
  return y;
}

Tensor fft_c2r(const Tensor& x, const Dims& dims_in, Norm norm, int64_t last_dim_size) {
  const Dims dims = wrapped(dims_in, x.dim(), "fft_c2r");
  const int64_t last = dims.back();
  if (last_dim_size < 1 || x.size(last) != last_dim_size / 2 + 1)
    fail("[fft_c2r] a signal of ", last_dim_size, " points needs ", last_dim_size / 2 + 1, " inputs along dim ", last,
         "; got shape ", x.shape());
  graph::OpCall call(kC2R);
  Tensor y;
  if (const int lvl = batching::level(x)) {
    y = batching::wrap(fft_c2r(batching::physical(x, lvl), shifted(dims), norm, last_dim_size), lvl);
  } else {
    Shape shape = x.shape();
    shape[last] = last_dim_size;
    y = empty(shape, {.dtype = to_real(x.dtype()), .device = x.device()});
    cpu::fft_c2r(x.detach().clone(), y, dims, scale_of(norm, y, dims));
  }
  if (call.capturing())
    call.set_replay([dims, norm, last_dim_size](
                        const graph::Tensors& in) { return graph::Tensors{fft_c2r(in[0], dims, norm, last_dim_size)}; },
                    graph::ReplaySizes::Held);
  // The adjoint: the forward DFT of the gradient, onesided; every input but the first (and
  // the middle one for an even n) stood for itself and its mirror image, so counts twice.
  call.finish(
      {&x}, {&y}, {},
      [dims, norm, last, last_dim_size](graph::Saved, graph::Tensors&& g) {
        const Tensor half = fft_r2c(g[0], dims, norm, true);
        const int64_t m = half.size(last), doubled = last_dim_size - m;
        if (doubled <= 0) return graph::Tensors{half};
        const Tensor k = arange(m, {.device = half.device()});
        const Tensor ones_m = ones({m}, {.dtype = to_real(half.dtype()), .device = half.device()});
        Dims shape(half.dim() + 1 - last, 1);  // over the real view: dim `last` and those after
        shape[0] = m;
        const Tensor weight = where((k >= 1).logical_and(k <= doubled), 2.0, ones_m).view(shape);
        return graph::Tensors{view_as_complex(view_as_real(half) * weight)};
      },
      [&](const graph::Tensors& t) { return graph::Tensors{fft_c2r(t[0], dims, norm, last_dim_size)}; });
  return y;
}

}  // namespace ug::fft
