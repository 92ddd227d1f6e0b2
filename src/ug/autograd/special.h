// torch.special's functions that are not plain ops: the incomplete gamma functions, polygamma
// and Hurwitz's zeta, the normal distribution's functions and the modified Bessel functions of
// order 0 and 1 (special.cpp). Each is a composition of elementwise ops with fixed iteration
// counts, computed in float64 and returned in the inputs' floating dtype (float32 for integers).
// Their derivatives are written with ops (so higher ones follow), in the arguments torch
// differentiates; asking for one torch does not have raises when the gradient is computed.
// They live in the autograd layer because their derivatives are custom functions.
#pragma once

#include <cstdint>

#include "ug/core/tensor.h"

namespace ug {

/** The regularized lower (igamma) and upper (igammac) incomplete gamma functions P(a, x) and
 *  Q(a, x): a series below x = a + 1, a continued fraction above, 200 terms each (relative error
 *  ~1e-13 for a up to ~500). NaN where a or x is negative or both are 0. Differentiable in x. */
Tensor igamma(const Tensor& a, const Tensor& x);
Tensor igammac(const Tensor& a, const Tensor& x);
/** The n-th derivative of digamma: digamma itself for n = 0, else (-1)^(n+1) n! zeta(n + 1, x). */
Tensor polygamma(int64_t n, const Tensor& x);

namespace special {

/** Hurwitz's zeta function sum_k (k + q)^-x by Euler-Maclaurin summation: 16 terms summed, 12
 *  Bernoulli corrections (float64 accuracy for q > -7; below, fewer digits). inf at x = 1 and
 *  at q = 0, -1, ...; NaN for x < 1 and for a negative q with a non-integer x. Differentiable
 *  in q only, as torch's. */
Tensor zeta(const Tensor& x, const Tensor& q);
/** x * log1p(y), 0 where x is 0 and y is not NaN. */
Tensor xlog1py(const Tensor& x, const Tensor& y);
/** -x log x, 0 at 0, -inf below. */
Tensor entr(const Tensor& x);
/** The standard normal's distribution function, its logarithm (accurate far into the left
 *  tail) and its inverse. */
Tensor ndtr(const Tensor& x);
Tensor log_ndtr(const Tensor& x);
Tensor ndtri(const Tensor& p);
/** exp(x^2) erfc(x), without overflow for large x. */
Tensor erfcx(const Tensor& x);
/** exp(-|x|) i0(x); the modified Bessel function of the first kind of order 1, and
 *  exp(-|x|) i1(x). */
Tensor i0e(const Tensor& x);
Tensor i1(const Tensor& x);
Tensor i1e(const Tensor& x);

/** Bessel functions of the first (J) and second (Y) kind of orders 0 and 1, the modified ones
 *  (I, K) and exp(x) K, and sin(x) / x: the power series up to 2, then Miller's backward
 *  recurrence from order 100 (J, Y) or the trapezoidal rule on K's integral over e^-x cosh t
 *  (K), then from 25 (J, Y) or 20 (K) on the asymptotic series (absolute error ~1e-15 for J
 *  and Y, relative ~1e-15 for I and K). Not differentiable, as torch's. */
Tensor bessel_j0(const Tensor& x);
Tensor bessel_j1(const Tensor& x);
Tensor bessel_y0(const Tensor& x);
Tensor bessel_y1(const Tensor& x);
Tensor modified_bessel_i0(const Tensor& x);
Tensor modified_bessel_i1(const Tensor& x);
Tensor modified_bessel_k0(const Tensor& x);
Tensor modified_bessel_k1(const Tensor& x);
Tensor scaled_modified_bessel_k0(const Tensor& x);
Tensor scaled_modified_bessel_k1(const Tensor& x);
Tensor spherical_bessel_j0(const Tensor& x);
/** Airy's Ai: its Maclaurin series within [-2, 2], K_1/3 right of it and J_+-1/3 left (Miller's
 *  recurrence, then Hankel's series past -12): absolute error ~1e-15 (relative right of 0),
 *  growing with |x| left of -12 as the phase (2/3)|x|^(3/2) loses its last bits. */
Tensor airy_ai(const Tensor& x);

/** The orthogonal polynomials of degree n (a tensor, truncated to integers, broadcast with x;
 *  0 where negative), with torch's values: Chebyshev's T, U, V, W (cos(n acos x) and its
 *  kin inside (-1, 1) for large n, the three-term recurrence elsewhere) and their shifted forms
 *  on [0, 1], Hermite's physicists' H (NaN past degree 128 in float32 and 512 in float64, as
 *  torch's) and probabilists' He, Laguerre's L and Legendre's P. The recurrence runs to the
 *  largest degree present, read back from n: ug.jit and onnx.export refuse them. Computed in
 *  float64; not differentiable, as torch's. */
Tensor chebyshev_polynomial_t(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_u(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_v(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_w(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, const Tensor& n);
Tensor hermite_polynomial_h(const Tensor& x, const Tensor& n);
Tensor hermite_polynomial_he(const Tensor& x, const Tensor& n);
Tensor laguerre_polynomial_l(const Tensor& x, const Tensor& n);
Tensor legendre_polynomial_p(const Tensor& x, const Tensor& n);

}  // namespace special

}  // namespace ug
