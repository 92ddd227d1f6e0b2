"""ug.nn: Module, layers and losses (ug::nn in C++), with functional forms and initialisers."""
import sys

from .. import _C
from .._export import export

__all__ = export(_C.nn, globals())

from . import functional, utils  # noqa: E402,F401
from .parameter import Parameter, functional_call  # noqa: E402,F401

init = _C.nn.init
sys.modules[__name__ + ".init"] = init  # `import unigrad.nn.init` and `from unigrad.nn import init`
__all__ += ["Parameter", "functional_call", "functional", "init", "utils"]
