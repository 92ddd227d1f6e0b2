"""ug.distributions.transforms: invertible maps for TransformedDistribution (torch.distributions.transforms)."""
from .. import _C
from .._export import export

__all__ = export(_C._distributions.transforms, globals())
