"""ug.special: torch.special's functions under torch.special's names. Most are the ops they
stand for (ug.special.i0 is ug.i0, gammaln is ug.lgamma, ...); the incomplete gamma functions,
zeta, the normal distribution's functions, erfcx and the Bessel functions are
ug/ops/special.h's. Like torch's, gammainc and gammaincc differentiate in `other`
only and zeta in `other` only: asking for the other derivative raises when it is computed."""
from . import (digamma, erf, erfc, erfinv, exp2, expm1, i0, lgamma, log1p, logit, logsumexp, mvlgamma, polygamma,
               round, sigmoid, sinc, xlogy)
from ._C._special import (bessel_j0, bessel_j1, bessel_y0, bessel_y1, entr, erfcx, gammainc, gammaincc, i0e, i1, i1e,
                         log_ndtr, modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1, ndtr,
                         ndtri, scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0, xlog1py, zeta)
from .nn.functional import log_softmax, softmax

__all__ = ["i0", "erf", "erfc", "erfinv", "digamma", "psi", "gammaln", "expit", "logit", "xlogy", "sinc", "log1p",
           "expm1", "exp2", "multigammaln", "polygamma", "gammainc", "gammaincc", "zeta", "xlog1py", "entr", "ndtr",
           "ndtri", "log_ndtr", "erfcx", "i0e", "i1", "i1e", "softmax", "log_softmax", "logsumexp", "round", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0"]

psi, gammaln, expit, multigammaln = digamma, lgamma, sigmoid, mvlgamma
