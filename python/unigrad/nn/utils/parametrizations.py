"""ug.nn.utils.parametrizations (torch.nn.utils.parametrizations): weight_norm, spectral_norm
and orthogonal registered as parametrizations (ug/nn/parametrizations.h)."""
from ... import _C

_p = _C.nn._utils
weight_norm = _p.weight_norm
spectral_norm = _p.spectral_norm
orthogonal = _p.orthogonal

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]
