"""ug.nn.functional: the layers and losses as functions (torch.nn.functional)."""
from .. import _C
from .._export import export

__all__ = export(_C.nn.functional, globals())
