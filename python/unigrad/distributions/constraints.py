"""ug.distributions.constraints: the sets parameters and values lie in (torch.distributions.constraints)."""
from .. import _C
from .._export import export

__all__ = export(_C._distributions.constraints, globals())
