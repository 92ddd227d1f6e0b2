"""ug.special: torch.special's functions that unigrad has, under torch.special's names. Names
only: each one is the op it stands for (ug.special.i0 is ug.i0, gammaln is ug.lgamma, ...)."""
from . import digamma, erf, erfc, erfinv, exp2, expm1, i0, lgamma, log1p, logit, mvlgamma, sigmoid, sinc, xlogy

__all__ = ["i0", "erf", "erfc", "erfinv", "digamma", "psi", "gammaln", "expit", "logit", "xlogy", "sinc", "log1p",
           "expm1", "exp2", "multigammaln"]

psi, gammaln, expit, multigammaln = digamma, lgamma, sigmoid, mvlgamma
