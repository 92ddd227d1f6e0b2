"""ug.special: torch.special's functions under torch.special's names. Most are the ops they
stand for (ug.special.i0 is ug.i0, gammaln is ug.lgamma, ...); the incomplete gamma functions,
zeta, the normal distribution's functions, erfcx and the scaled and order-1 modified Bessel
functions are ug/ops/special.h's. Like torch's, gammainc and gammaincc differentiate in `other`
only and zeta in `other` only: asking for the other derivative raises when it is computed."""
from . import (digamma, erf, erfc, erfinv, exp2, expm1, i0, lgamma, log1p, logit, logsumexp, mvlgamma, polygamma,
               round, sigmoid, sinc, xlogy)
from ._C._special import entr, erfcx, gammainc, gammaincc, i0e, i1, i1e, log_ndtr, ndtr, ndtri, xlog1py, zeta
from .nn.functional import log_softmax, softmax

__all__ = ["i0", "erf", "erfc", "erfinv", "digamma", "psi", "gammaln", "expit", "logit", "xlogy", "sinc", "log1p",
           "expm1", "exp2", "multigammaln", "polygamma", "gammainc", "gammaincc", "zeta", "xlog1py", "entr", "ndtr",
           "ndtri", "log_ndtr", "erfcx", "i0e", "i1", "i1e", "softmax", "log_softmax", "logsumexp", "round"]

psi, gammaln, expit, multigammaln = digamma, lgamma, sigmoid, mvlgamma
