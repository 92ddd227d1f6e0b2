"""ug.distributions: probability distributions (torch.distributions; ug::distributions in C++)."""
from .. import _C
from .._export import export
from . import transforms

__all__ = [*export(_C._distributions, globals()), "transforms"]
