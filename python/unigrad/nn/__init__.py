"""ug.nn: Module, layers and losses (ug::nn in C++), with functional forms and initialisers."""
from .. import _C
from .._export import export

__all__ = export(_C.nn, globals())

from . import functional  # noqa: E402,F401
from . import utils  # noqa: E402,F401
