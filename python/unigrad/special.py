"""ug.special: torch.special's functions under torch.special's names. Most are the ops they
stand for (ug.special.i0 is ug.i0, gammaln is ug.lgamma, ...); the incomplete gamma functions,
zeta, the normal distribution's functions, erfcx, the Bessel functions and the orthogonal
polynomials are ug/autograd/special.h's. Like torch's, gammainc and gammaincc differentiate in `other`
only and zeta in `other` only: asking for the other derivative raises when it is computed."""
from . import (digamma, erf, erfc, erfinv, exp2, expm1, i0, lgamma, log1p, logit, logsumexp, mvlgamma, polygamma,
               round, sigmoid, sinc, xlogy)
from ._C._special import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, chebyshev_polynomial_t, chebyshev_polynomial_u,
                         chebyshev_polynomial_v, chebyshev_polynomial_w, entr, erfcx, gammainc, gammaincc,
                         hermite_polynomial_h, hermite_polynomial_he, i0e, i1, i1e, laguerre_polynomial_l,
                         legendre_polynomial_p, log_ndtr, modified_bessel_i0, modified_bessel_i1, modified_bessel_k0,
                         modified_bessel_k1, ndtr, ndtri, scaled_modified_bessel_k0, scaled_modified_bessel_k1,
                         shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
                         shifted_chebyshev_polynomial_w, spherical_bessel_j0, xlog1py, zeta)
from .nn.functional import log_softmax, softmax

__all__ = ["i0", "erf", "erfc", "erfinv", "digamma", "psi", "gammaln", "expit", "logit", "xlogy", "sinc", "log1p",
           "expm1", "exp2", "multigammaln", "polygamma", "gammainc", "gammaincc", "zeta", "xlog1py", "entr", "ndtr",
           "ndtri", "log_ndtr", "erfcx", "i0e", "i1", "i1e", "softmax", "log_softmax", "logsumexp", "round", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
           "legendre_polynomial_p"]

psi, gammaln, expit, multigammaln = digamma, lgamma, sigmoid, mvlgamma
