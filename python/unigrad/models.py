"""ug.models: the built-in architectures of `ug train` (ug::models in C++)."""
from . import _C
from ._export import export

__all__ = export(_C.models, globals())
