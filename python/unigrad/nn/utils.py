"""ug.nn.utils: gradient clipping (clip_grad_norm_, clip_grad_value_), as torch.nn.utils."""
from .. import _C
from .._export import export

__all__ = export(_C.optim._utils, globals())
