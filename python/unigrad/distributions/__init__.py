"""ug.distributions: probability distributions (torch.distributions; ug::distributions in C++)."""
from .. import _C
from .._export import export
from . import constraints, transforms
from .transforms import *  # noqa: F403 (torch.distributions has its transforms at the top level too)

__all__ = [*export(_C._distributions, globals()), *transforms.__all__, "transforms", "constraints", "register_kl"]
# After the export: this kl_divergence, which also dispatches to register_kl's pairs, replaces the C++ one.
from .kl import kl_divergence, register_kl  # noqa: E402, F401 (kl_divergence is in __all__ already)
