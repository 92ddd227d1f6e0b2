// Complex tensors (complex64, complex128): their parts as views, and the complex forms of the
// elementwise ops and sums (matrix products run their own kernel, ops/linalg.cpp). PyTorch's
// names and gradient convention: a real loss's gradient for z = x + iy is dL/dx + i dL/dy.
#pragma once

#include <optional>

#include "ug/core/tensor.h"
#include "ug/ops/binary_kinds.h"
#include "ug/ops/unary_kinds.h"

namespace ug {

/** z's storage as its real and imaginary parts: a real view with a last dim of size 2. */
Tensor view_as_real(const Tensor& z);
/** x [..., 2] (float32 or float64, last dim contiguous) as a complex view of one dim less. */
Tensor view_as_complex(const Tensor& x);
/** The real part (a view); a real x itself. */
Tensor real(const Tensor& z);
/** The imaginary part (a view); a real x has none (TypeError, as in torch). */
Tensor imag(const Tensor& z);
/** g's real part where the tensor it is the gradient of has a real dtype: the gradient of a
 *  real value promoted into a complex computation (torch's convention); else g itself. */
Tensor real_part_if(const Tensor& g, DType of);
/** The complex conjugate; a real x itself. */
Tensor conj(const Tensor& z);
/** real + i imag, broadcast (torch.complex): float32 or float64 parts of one dtype. */
Tensor complex(const Tensor& real, const Tensor& imag);
/** abs * (cos(angle) + i sin(angle)) (torch.polar). */
Tensor polar(const Tensor& abs, const Tensor& angle);
/** The argument of each element: atan2(imag, real); for real x 0 or pi (NaN stays NaN). */
Tensor angle(const Tensor& x);

namespace ops::complex_math {

// The complex forms of the ops, called by the ops themselves for complex operands. Each is
// composed over view_as_real, so its derivative, batching and compiled forms are those of the
// real ops it is made of.
Tensor unary(UnaryOp op, const Tensor& z);
/** a and b already have the complex result dtype. */
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor sum(const Tensor& z, const Dims& dims, bool keepdim);
Tensor mean(const Tensor& z, const Dims& dims, bool keepdim);
/** The product over dims (none: all), by halves: log2(n) complex products of whole slices. */
Tensor prod(const Tensor& z, const Dims& dims, bool keepdim);
/** torch's variance of complex values: that of the real parts plus that of the imaginary ones,
 *  a real result. */
Tensor var(const Tensor& z, const std::optional<Dims>& dims, double correction, bool keepdim);
Tensor cumsum(const Tensor& z, int64_t dim);
/** The running product along dim as a doubling scan: log2(n) complex products. */
Tensor cumprod(const Tensor& z, int64_t dim);

}  // namespace ops::complex_math

}  // namespace ug
