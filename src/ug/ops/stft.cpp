// torch.stft and torch.istft, composed: framing by an index, the window, the FFT primitives,
// and overlap-add by scatter_add; so their derivatives, batching and compiled forms are those
// of the ops they are made of.
#include <algorithm>

#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/fft.h"
#include "ug/ops/join.h"

namespace ug {

namespace {

/** z * w, w broadcast against z's trailing dims; a real w scales a complex z's parts. */
Tensor times(const Tensor& z, const Tensor& w) {
  if (is_complex(z.dtype()) && !is_complex(w.dtype())) return view_as_complex(view_as_real(z) * w.unsqueeze(-1));
  if (is_complex(w.dtype()) && !is_complex(z.dtype())) return z.to(w.dtype()) * w;
  return z * w;
}

/** The start of each of `frames` frames, hop apart, plus each offset in a frame: [frames * n]. */
Tensor frame_index(int64_t frames, int64_t n, int64_t hop, Device device) {
  const Tensor starts = arange(frames, {.dtype = DType::Int64, .device = device}) * hop;
  return (starts.unsqueeze(1) + arange(n, {.dtype = DType::Int64, .device = device}).unsqueeze(0)).flatten();
}

/** The window of n_fft samples: `window` (win_length of them, default ones) centred in zeros. */
Tensor padded_window(const std::optional<Tensor>& window, int64_t n_fft, int64_t win_length, DType dtype, Device device,
                     const char* fname) {
  if (win_length <= 0 || win_length > n_fft)
    fail<ValueError>("[", fname, "] expected 0 < win_length <= n_fft, but got win_length=", win_length,
                     " and n_fft=", n_fft);
  if (window && (window->dim() != 1 || window->size(0) != win_length))
    fail<ValueError>("[", fname, "] expected a 1D window tensor of size equal to win_length=", win_length,
                     ", but got window with shape ", window->shape());
  const Tensor w = window ? *window : ones({win_length}, {.dtype = dtype, .device = device});
  const int64_t left = (n_fft - win_length) / 2;
  return win_length == n_fft ? w : pad(w, {left, n_fft - win_length - left});
}

}  // namespace

Tensor stft(const Tensor& x, int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
            const std::optional<Tensor>& window, bool center, std::string_view pad_mode, bool normalized,
            std::optional<bool> onesided, bool return_complex) {
  if (x.dim() != 1 && x.dim() != 2) fail<ValueError>("[stft] expected a 1D or 2D input, but got shape ", x.shape());
  if (n_fft <= 0) fail<ValueError>("[stft] expected n_fft > 0, but got n_fft=", n_fft);
  Tensor in = x.dim() == 1 ? x.unsqueeze(0) : x;
  if (is_integral(in.dtype(), true)) in = in.to(get_default_dtype());
  if (center) {
    // pad() pads the last dims: a complex input's by its real view, the parts left alone.
    const int64_t p = n_fft / 2;
    in = is_complex(in.dtype()) ? view_as_complex(pad(view_as_real(in), {0, 0, p, p}, pad_mode).contiguous())
                                : pad(in, {p, p}, pad_mode);
  }
  const int64_t length = in.size(-1), hop = hop_length.value_or(n_fft / 4);
  if (n_fft > length)
    fail<ValueError>("[stft] expected 0 < n_fft <= ", length, " (the padded input's length), but got n_fft=", n_fft);
  if (hop <= 0) fail<ValueError>("[stft] expected hop_length > 0, but got hop_length=", hop);
  const DType part = is_complex(in.dtype()) ? to_real(in.dtype()) : in.dtype();
  const Tensor w = padded_window(window, n_fft, win_length.value_or(n_fft), part, in.device(), "stft");
  const bool complex_signal = is_complex(in.dtype()) || is_complex(w.dtype());
  const bool half = onesided.value_or(!complex_signal);
  if (half && complex_signal)
    fail<ValueError>("[stft] cannot have onesided output if the window or input is complex (input ", in.dtype(),
                     ", window ", w.dtype(), ")");
  const int64_t frames = 1 + (length - n_fft) / hop;
  const Tensor framed =
      times(in.index_select(-1, frame_index(frames, n_fft, hop, in.device())).unflatten(-1, {frames, n_fft}), w);
  const fft::Norm norm = normalized ? fft::Norm::ByRootN : fft::Norm::None;
  Tensor y = is_complex(framed.dtype()) ? fft::fft_c2c(framed, {2}, norm, true) : fft::fft_r2c(framed, {2}, norm, half);
  y = y.transpose(1, 2);
  if (x.dim() == 1) y = y.squeeze({0});
  return return_complex ? y : view_as_real(y);
}

Tensor istft(const Tensor& x, int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
             const std::optional<Tensor>& window, bool center, bool normalized, std::optional<bool> onesided,
             std::optional<int64_t> length, bool return_complex) {
  if (!is_complex(x.dtype()))
    fail<TypeError>("[istft] requires a complex input (torch.stft's return_complex=True form), got ", x.dtype());
  if (x.dim() != 2 && x.dim() != 3)
    fail<ValueError>("[istft] expected a 2D or 3D input [batch?, freqs, frames], but got shape ", x.shape());
  const Tensor in = x.dim() == 2 ? x.unsqueeze(0) : x;
  const int64_t freqs = in.size(1), frames = in.size(2), hop = hop_length.value_or(n_fft / 4);
  if (hop <= 0) fail<ValueError>("[istft] expected hop_length > 0, but got hop_length=", hop);
  const bool half = onesided.value_or(freqs != n_fft);
  if (n_fft <= 0 || freqs != (half ? n_fft / 2 + 1 : n_fft))
    fail<ValueError>("[istft] expected the frequency dim's size to be ",
                     half ? "n_fft / 2 + 1 = " : "n_fft = ", half ? n_fft / 2 + 1 : n_fft, " (onesided=", half,
                     "), but got shape ", x.shape());
  if (window && is_complex(window->dtype()))
    fail<TypeError>("[istft] complex windows are not supported (window dtype ", window->dtype(), ")");
  const Tensor w = padded_window(window, n_fft, win_length.value_or(n_fft), to_real(in.dtype()), in.device(), "istft");
  const fft::Norm norm = normalized ? fft::Norm::ByRootN : fft::Norm::ByN;
  const Tensor spectra = in.transpose(1, 2);  // [batch, frames, freqs]
  Tensor y;
  if (return_complex) {
    if (half) fail<ValueError>("[istft] return_complex=True needs a two-sided input (onesided=False)");
    y = fft::fft_c2c(spectra, {2}, norm, false);
  } else {
    y = fft::fft_c2r(half ? spectra : spectra.narrow(2, 0, n_fft / 2 + 1), {2}, norm, n_fft);
  }
  y = times(y, w);  // [batch, frames, n_fft]
  // Overlap-add of the frames and of the squared window, on a complex signal's real view.
  const int64_t total = n_fft + hop * (frames - 1), batch = y.size(0);
  const Tensor index = frame_index(frames, n_fft, hop, y.device());
  const bool cplx = is_complex(y.dtype());
  const Tensor parts = cplx ? view_as_real(y).reshape({batch, frames * n_fft, 2}) : y.reshape({batch, frames * n_fft});
  const Tensor at = cplx ? index.view({1, -1, 1}).expand(parts.shape()) : index.view({1, -1}).expand(parts.shape());
  Dims sum_shape = parts.shape();
  sum_shape[1] = total;
  const Tensor sum = zeros(sum_shape, {.dtype = parts.dtype(), .device = parts.device()}).scatter_add(1, at, parts);
  const Tensor squared = w.square().repeat({frames});
  const Tensor envelope =
      zeros({total}, {.dtype = squared.dtype(), .device = w.device()}).scatter_add(0, index, squared);
  const int64_t start = center ? n_fft / 2 : 0;
  const int64_t end = length ? start + *length : (center ? total - n_fft / 2 : total);
  const int64_t stop = std::min(end, total);
  Tensor signal = sum.slice(1, start, stop);
  const Tensor env = envelope.slice(0, start, stop);
  if (env.numel() > 0 && env.abs().min().item<double>() < 1e-11)
    fail<ValueError>("[istft] window overlap add min: ", env.abs().min().item<double>(),
                     " < 1e-11: the window's squares, overlapped hop_length=", hop, " apart, must not vanish");
  signal = signal / (cplx ? env.unsqueeze(-1) : env);
  if (end > total) signal = cplx ? pad(signal, {0, 0, 0, end - total}) : pad(signal, {0, end - total});
  if (cplx) signal = view_as_complex(signal.contiguous());
  return x.dim() == 2 ? signal.squeeze({0}) : signal;
}

}  // namespace ug
