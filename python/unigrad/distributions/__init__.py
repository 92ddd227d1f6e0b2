"""ug.distributions: probability distributions (torch.distributions; ug::distributions in C++)."""
from .. import _C
from .._export import export
from . import transforms
from .transforms import *  # noqa: F403 (torch.distributions has its transforms at the top level too)

__all__ = [*export(_C._distributions, globals()), *transforms.__all__, "transforms"]
