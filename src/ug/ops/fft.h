// Discrete Fourier transforms, torch.fft's functions and signatures (NumPy's and JAX's are the
// same), composed from three primitive ops: torch's internal split into complex-to-complex,
// real-to-complex and complex-to-real transforms, each with its derivatives and batching rule.
// `norm` is torch's: "backward" (the default: the inverse scaled by 1/n), "ortho" (both by
// 1/sqrt(n)) or "forward" (the forward by 1/n). Real inputs to the complex transforms become
// complex, integer inputs float (the default dtype).
#pragma once

#include <optional>
#include <string_view>

#include "ug/core/tensor.h"

namespace ug::fft {

/** The scale a primitive applies: none, 1/sqrt(n) or 1/n, n the product of the signal sizes. */
enum class Norm { None, ByRootN, ByN };

// ---- the primitives (torch's _fft_c2c, _fft_r2c, _fft_c2r) ------------------------------------

/** The DFT of a complex x over `dims` (distinct), e^-2pi i jk/n when `forward`, else e^+. */
Tensor fft_c2c(const Tensor& x, const Dims& dims, Norm norm, bool forward);
/** The forward DFT of a real x over `dims`; `onesided`: the last of them keeps n/2 + 1. */
Tensor fft_r2c(const Tensor& x, const Dims& dims, Norm norm, bool onesided);
/** The real inverse DFT over `dims` of the Hermitian signal whose first half x is (n/2 + 1
 *  along the last of `dims`, n = last_dim_size there). */
Tensor fft_c2r(const Tensor& x, const Dims& dims, Norm norm, int64_t last_dim_size);

namespace detail {
/** x trimmed, or zero-padded at the end, to n along dim. */
Tensor resized(const Tensor& x, int64_t dim, int64_t n);
}  // namespace detail

// ---- torch.fft --------------------------------------------------------------------------------

using NormMode = std::optional<std::string_view>;
using OptDims = std::optional<Dims>;

/** One dim; n: the signal's length, the input trimmed or zero-padded to it. */
Tensor fft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1, NormMode norm = {});
Tensor ifft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1, NormMode norm = {});
/** The n/2 + 1 non-redundant outputs of a real input's fft. */
Tensor rfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1, NormMode norm = {});
/** The inverse of rfft: a real signal of length n (default 2 (m - 1) for m inputs). */
Tensor irfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1, NormMode norm = {});
/** The fft of a Hermitian signal given by its first half: a real result of length n. */
Tensor hfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1, NormMode norm = {});
/** The inverse of hfft: the first n/2 + 1 outputs of a real input's ifft. */
Tensor ihfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1, NormMode norm = {});

/** Over the last two dims by default; s: the signal sizes. */
Tensor fft2(const Tensor& x, OptDims s = {}, const Dims& dim = {-2, -1}, NormMode norm = {});
Tensor ifft2(const Tensor& x, OptDims s = {}, const Dims& dim = {-2, -1}, NormMode norm = {});
Tensor rfft2(const Tensor& x, OptDims s = {}, const Dims& dim = {-2, -1}, NormMode norm = {});
Tensor irfft2(const Tensor& x, OptDims s = {}, const Dims& dim = {-2, -1}, NormMode norm = {});
Tensor hfft2(const Tensor& x, OptDims s = {}, const Dims& dim = {-2, -1}, NormMode norm = {});
Tensor ihfft2(const Tensor& x, OptDims s = {}, const Dims& dim = {-2, -1}, NormMode norm = {});

/** Over `dim` (default: the last len(s) dims, or all); s: the signal sizes (-1: the input's). */
Tensor fftn(const Tensor& x, OptDims s = {}, OptDims dim = {}, NormMode norm = {});
Tensor ifftn(const Tensor& x, OptDims s = {}, OptDims dim = {}, NormMode norm = {});
Tensor rfftn(const Tensor& x, OptDims s = {}, OptDims dim = {}, NormMode norm = {});
Tensor irfftn(const Tensor& x, OptDims s = {}, OptDims dim = {}, NormMode norm = {});
Tensor hfftn(const Tensor& x, OptDims s = {}, OptDims dim = {}, NormMode norm = {});
Tensor ihfftn(const Tensor& x, OptDims s = {}, OptDims dim = {}, NormMode norm = {});

/** The sample frequencies of an fft of n points spaced d apart: [0, 1, ..., -1] / (d n). */
Tensor fftfreq(int64_t n, double d = 1.0, Options opts = {});
/** The non-negative ones, for rfft: [0, 1, ..., n/2] / (d n). */
Tensor rfftfreq(int64_t n, double d = 1.0, Options opts = {});
/** Rolls the zero frequency to the middle of each of `dim` (default: every dim). */
Tensor fftshift(const Tensor& x, OptDims dim = {});
/** fftshift's inverse. */
Tensor ifftshift(const Tensor& x, OptDims dim = {});

}  // namespace ug::fft

namespace ug {

/** torch.stft: the DFTs of x's frames (x [L] or [B, L]) of n_fft samples, hop_length apart
 *  (default n_fft / 4), each times `window` (win_length long, default n_fft, centred in n_fft;
 *  none: ones). center: x padded by n_fft / 2 on both sides (pad_mode: "reflect", "constant",
 *  "replicate" or "circular"). A result [B?, freqs, frames]; onesided (default: for real x and
 *  window) keeps n_fft / 2 + 1 freqs; normalized: scaled by 1/sqrt(n_fft); return_complex
 *  false: the real view [..., 2]. */
Tensor stft(const Tensor& x, int64_t n_fft, std::optional<int64_t> hop_length = {},
            std::optional<int64_t> win_length = {}, const std::optional<Tensor>& window = {}, bool center = true,
            std::string_view pad_mode = "reflect", bool normalized = false, std::optional<bool> onesided = {},
            bool return_complex = true);
/** torch.istft: stft's inverse by overlap-add, each frame weighted by the window and the sum
 *  divided by the window's squared envelope (an envelope below 1e-11 anywhere is refused).
 *  x: [B?, freqs, frames] complex; length: the signal's (trimmed or zero-padded); return_complex:
 *  a complex signal (two-sided input only). */
Tensor istft(const Tensor& x, int64_t n_fft, std::optional<int64_t> hop_length = {},
             std::optional<int64_t> win_length = {}, const std::optional<Tensor>& window = {}, bool center = true,
             bool normalized = false, std::optional<bool> onesided = {}, std::optional<int64_t> length = {},
             bool return_complex = false);

}  // namespace ug
