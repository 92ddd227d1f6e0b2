// Signal ops: DFT (opsets 17 and 20), STFT, the Hann, Hamming and Blackman windows and
// MelWeightMatrix. A transform is a product with cosine and sine matrices along its axis, so
// gradients flow through it; complex values are ONNX's trailing dim of [real, imaginary].
#include <cmath>
#include <initializer_list>
#include <numbers>

#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/** cos or sin(2 pi j k / n) for output k (rows) and input j (columns), as `dtype`. */
Tensor twiddles(int64_t rows, int64_t cols, int64_t n, bool sine, DType dtype) {
  Tensor t = empty({rows, cols}, {.dtype = DType::Float64});
  double* p = t.data_ptr<double>();
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t j = 0; j < cols; ++j) {
      const double angle = 2 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      p[k * cols + j] = sine ? std::sin(angle) : std::cos(angle);
    }
  return t.to(dtype);
}

/** x with its last dim cut or zero-padded to `length`. */
Tensor fit_length(const Tensor& x, int64_t length) {
  const int64_t have = x.size(-1);
  if (have == length) return x;
  if (have > length) return x.narrow(-1, 0, length);
  return pad(x, {0, length - have});
}

/** The transform of x (real and imaginary parts, im undefined for a real signal) along its last
 *  dim, of length n: the forward DFT (onesided: the first n / 2 + 1 bins), the inverse one, or
 *  (inverse and onesided) the real signal whose one-sided spectrum x is. */
std::pair<Tensor, Tensor> transform(Tensor re, Tensor im, int64_t n, bool inverse, bool onesided) {
  // In float64, cast back at the end: float32 sums leave visible noise where bins cancel to zero.
  const DType out_dtype = re.dtype(), dtype = DType::Float64;
  auto done = [&](const Tensor& a, const Tensor& b) {
    return std::pair{a.to(out_dtype), b.defined() ? b.to(out_dtype) : Tensor()};
  };
  re = re.to(dtype);
  im = im.defined() ? im.to(dtype) : Tensor();
  if (inverse && onesided) {  // numpy's irfft: Hermitian symmetry counts the bins between twice
    const int64_t bins = n / 2 + 1;
    re = fit_length(re, bins);
    im = im.defined() ? fit_length(im, bins) : Tensor();
    Tensor weight = empty({bins, 1}, {.dtype = DType::Float64});
    for (int64_t k = 0; k < bins; ++k)
      weight.data_ptr<double>()[k] = (k == 0 || 2 * k == n ? 1.0 : 2.0) / static_cast<double>(n);
    weight = weight.to(dtype);
    Tensor out = matmul(re, mul(twiddles(bins, n, n, false, dtype), weight));
    if (im.defined()) out = sub(out, matmul(im, mul(twiddles(bins, n, n, true, dtype), weight)));
    return done(out, Tensor());
  }
  re = fit_length(re, n);
  im = im.defined() ? fit_length(im, n) : Tensor();
  const int64_t bins = onesided && !inverse ? n / 2 + 1 : n;
  const Tensor c = twiddles(bins, n, n, false, dtype).transpose(0, 1),
               s = twiddles(bins, n, n, true, dtype).transpose(0, 1);
  // e^{-i theta} forward, e^{+i theta} / n inverse.
  const double sign = inverse ? 1.0 : -1.0;
  Tensor out_re = matmul(re, c), out_im = mul(matmul(re, s), sign);
  if (im.defined()) {
    out_re = sub(out_re, mul(matmul(im, s), sign));
    out_im = add(out_im, matmul(im, c));
  }
  if (inverse) {
    out_re = div(out_re, static_cast<double>(n));
    out_im = div(out_im, static_cast<double>(n));
  }
  return done(out_re, out_im);
}

/** The real and imaginary parts of ONNX's complex layout [..., 1 or 2]. */
std::pair<Tensor, Tensor> split_complex(const OpContext& c, const Tensor& x) {
  if (x.dim() < 2 || (x.size(-1) != 1 && x.size(-1) != 2))
    c.fail("input must have a last dim of 1 (real) or 2 (real, imaginary), got shape ", x.shape());
  if (!is_floating(x.dtype())) c.fail<TypeError>("input must be a floating-point tensor, got ", x.dtype());
  return {x.select(-1, 0), x.size(-1) == 2 ? x.select(-1, 1) : Tensor()};
}

Tensor join_complex(const std::pair<Tensor, Tensor>& parts) {
  return parts.second.defined() ? stack({parts.first, parts.second}, -1) : parts.first.unsqueeze(-1);
}

Outputs dft_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  auto [re, im] = split_complex(c, x);
  const int64_t rank = x.dim();
  int64_t axis =
      c.opset() < 20 ? c.attr_int("axis", 1) : (c.has_input(2) ? static_cast<int64_t>(c.scalar_input(2)) : -2);
  if (axis < -rank || axis >= rank - 1 || axis == -1)
    c.fail("axis ", axis, " is not a signal axis of shape ", x.shape());
  if (axis < 0) axis += rank;
  const bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  if (onesided && !inverse && im.defined()) c.fail("onesided=1 needs a real input (last dim 1)");
  const int64_t have = x.size(axis);
  int64_t n = inverse && onesided ? 2 * (have - 1) : have;
  if (c.has_input(1)) n = static_cast<int64_t>(c.scalar_input(1));
  if (n < 1 || n > c.max_elements()) c.fail("dft_length must be positive, got ", n);
  re = re.movedim(axis, -1);
  im = im.defined() ? im.movedim(axis, -1) : Tensor();
  auto [out_re, out_im] = transform(re, im, n, inverse, onesided);
  out_re = out_re.movedim(-1, axis);
  if (out_im.defined()) out_im = out_im.movedim(-1, axis);
  return {join_complex({out_re, out_im})};
}

Outputs stft_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() != 3) c.fail("signal must have shape [batch, length, 1 or 2], got ", x.shape());
  auto [re, im] = split_complex(c, x);
  const int64_t step = static_cast<int64_t>(c.scalar_input(1));
  const Tensor window = c.has_input(2) ? c.input(2) : Tensor();
  if (window.defined() && window.dim() != 1) c.fail("window must be 1-d, got shape ", window.shape());
  const int64_t frame = c.has_input(3)     ? static_cast<int64_t>(c.scalar_input(3))
                        : window.defined() ? window.size(0)
                                           : x.size(1);
  if (window.defined() && window.size(0) != frame)
    c.fail("window has ", window.size(0), " values, frame_length is ", frame);
  if (step < 1 || frame < 1 || frame > x.size(1))
    c.fail("frame_step (", step, ") must be positive and frame_length (", frame, ") in [1, ", x.size(1), "]");
  const bool onesided = c.attr_int("onesided", 1) != 0;
  if (onesided && im.defined()) c.fail("onesided=1 needs a real signal (last dim 1)");
  const int64_t frames = (x.size(1) - frame) / step + 1;
  if (frames * frame > c.max_elements())
    c.fail("asks for ", frames, " frames of ", frame, ", over LoadLimits::max_elements");
  Tensor index = empty({frames * frame}, {.dtype = DType::Int64});
  int64_t* ip = index.data_ptr<int64_t>();
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < frame; ++j) ip[f * frame + j] = f * step + j;
  auto frames_of = [&](const Tensor& part) {
    Tensor t = index_select(part, 1, index).reshape({x.size(0), frames, frame});
    return window.defined() ? mul(t, window.to(part.dtype())) : t;
  };
  return {join_complex(transform(frames_of(re), im.defined() ? frames_of(im) : Tensor(), frame, false, onesided))};
}

/** sum_k sign^k a_k cos(2 pi k n / N) for n < size, N = size (periodic) or size - 1. */
Outputs cosine_window(const OpContext& c, std::initializer_list<double> a) {
  const int64_t size = static_cast<int64_t>(c.scalar_input(0));
  if (size < 0 || size > c.max_elements()) c.fail("size must be in [0, ", c.max_elements(), "], got ", size);
  const DType dtype = dtype_from_onnx(c.attr_int("output_datatype", 1), "output_datatype");
  const double period = static_cast<double>(c.attr_int("periodic", 1) ? size : size - 1);
  Tensor t = empty({size}, {.dtype = DType::Float64});
  double* p = t.data_ptr<double>();
  for (int64_t n = 0; n < size; ++n) {
    double v = 0, sign = 1;
    int k = 0;
    for (double ak : a) {
      v += sign * ak * std::cos(2 * std::numbers::pi * k++ * static_cast<double>(n) / period);
      sign = -sign;
    }
    p[n] = v;
  }
  return {t.to(dtype)};
}

Outputs mel_weight_matrix_op(const OpContext& c) {
  const int64_t mels = static_cast<int64_t>(c.scalar_input(0)), dft_length = static_cast<int64_t>(c.scalar_input(1));
  const double rate = c.scalar_input(2), low = c.scalar_input(3), high = c.scalar_input(4);
  if (mels < 1 || dft_length < 1 || rate <= 0 || (dft_length / 2 + 1) * mels > c.max_elements())
    c.fail("num_mel_bins (", mels, "), dft_length (", dft_length, ") and sample_rate (", rate, ") must be positive");
  const int64_t spectrum = dft_length / 2 + 1;
  // The triangles' corners: mel_bins + 2 points evenly spaced in mels, as spectrum bins.
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = mel(low), step = (mel(high) - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> bins(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * std::expm1((static_cast<double>(i) * step + low_mel) / 2595 * std::log(10.0));
    bins[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / rate));
  }
  Tensor t = zeros({spectrum, mels}, {.dtype = DType::Float64});
  double* p = t.data_ptr<double>();
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spectrum)
      c.fail("the mel band ", i, " reaches spectrum bin ", j, ", outside [0, ", spectrum, ")");
    return p[j * mels + i];
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = bins[static_cast<size_t>(i)], centre = bins[static_cast<size_t>(i + 1)],
                  right = bins[static_cast<size_t>(i + 2)];
    if (centre == left) at(centre, i) = 1;
    else
      for (int64_t j = left; j <= centre; ++j)
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(centre - left);
    for (int64_t j = centre; j < right; ++j)
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - centre);
  }
  return {t.to(dtype_from_onnx(c.attr_int("output_datatype", 1), "output_datatype"))};
}

}  // namespace

void add_signal_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"DFT", dft_op, 1, 3, 1, 17, {}});
  ops.push_back({"STFT", stft_op, 2, 4, 1, 17, {}});
  ops.push_back({"HannWindow", +[](const OpContext& c) { return cosine_window(c, {0.5, 0.5}); }, 1, 1, 1, 17, {}});
  ops.push_back({"HammingWindow",
                 +[](const OpContext& c) {
                   return cosine_window(c, {25.0 / 46, 21.0 / 46});
                 },
                 1,
                 1,
                 1,
                 17,
                 {}});
  ops.push_back({"BlackmanWindow",
                 +[](const OpContext& c) {
                   return cosine_window(c, {0.42, 0.5, 0.08});
                 },
                 1,
                 1,
                 1,
                 17,
                 {}});
  ops.push_back({"MelWeightMatrix", mel_weight_matrix_op, 5, 5, 1, 17, {}});
}

}  // namespace ug::onnx
