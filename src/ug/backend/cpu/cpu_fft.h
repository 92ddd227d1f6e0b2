// Discrete Fourier transforms on FFTW 3 (its guru64 interface): any strides, the transform
// over some dims and batched over the others. Unnormalised: the ops scale the results.
#pragma once

#include "ug/core/tensor.h"

namespace ug::cpu {

/** out = scale * the complex DFT of in over `dims` (distinct, in [0, dim)), e^-2pi i jk/n
 *  when `forward`, e^+2pi i jk/n otherwise; in (any strides) and out complex64 or complex128
 *  of one shape. */
void fft_c2c(const Tensor& in, const Tensor& out, const Dims& dims, bool forward, double scale);
/** out = scale * the forward DFT of a real in over `dims`; onesided: the last of them halved
 *  to n/2 + 1 (Hermitian symmetry gives the rest), else whole. out has the complex dtype of
 *  in's precision. */
void fft_r2c(const Tensor& in, const Tensor& out, const Dims& dims, bool onesided, double scale);
/** out = scale * the real inverse DFT (e^+2pi i jk/n) over `dims` of the Hermitian signal whose first
 *  half (n/2 + 1 along the last of `dims`, n = out's size there) is in; the imaginary parts
 *  that a real result cannot have (index 0, and n/2 for even n) are ignored. in must be a
 *  contiguous scratch copy: the transform overwrites it. */
void fft_c2r(const Tensor& in, const Tensor& out, const Dims& dims, double scale);

}  // namespace ug::cpu
