"""ug.nn.utils (torch.nn.utils): gradient clipping (clip_grad_norm_, clip_grad_value_),
parametrizations (parametrize, parametrizations) and the hook-based weight_norm and
spectral_norm."""
from ... import _C
from ..._export import export
from . import parametrizations, parametrize  # noqa: F401

_p = _C.nn._parametrize
weight_norm = _p.hook_weight_norm
remove_weight_norm = _p.remove_weight_norm
spectral_norm = _p.hook_spectral_norm
remove_spectral_norm = _p.remove_spectral_norm

__all__ = export(_C.optim._utils, globals()) + [
    "parametrizations",
    "parametrize",
    "remove_spectral_norm",
    "remove_weight_norm",
    "spectral_norm",
    "weight_norm",
]
