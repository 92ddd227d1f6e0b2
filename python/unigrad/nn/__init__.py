"""ug.nn: Module, layers and losses (ug::nn in C++), with functional forms and initialisers."""
import sys

from .. import _C
from .._export import export

__all__ = export(_C.nn, globals())

from . import functional, parallel, utils  # noqa: E402,F401
from .parameter import Buffer, Parameter, functional_call  # noqa: E402,F401
from .lazy import *  # noqa: E402,F401,F403
from . import lazy as _lazy  # noqa: E402


def _forward_from_other_names(cls, **kwargs):
    """A subclass may name its forward `call` (Keras) or `construct` (MindSpore)."""
    for name in ("call", "construct"):
        if name in cls.__dict__ and "forward" not in cls.__dict__:
            cls.forward = cls.__dict__[name]


Module.__init_subclass__ = classmethod(_forward_from_other_names)  # noqa: F405,F821

init = _C.nn.init
SyncBatchNorm = _C.distributed.SyncBatchNorm  # torch.nn.SyncBatchNorm; ug::distributed in C++
DataParallel = parallel.DataParallel
compute_average_loss = _C.train.compute_average_loss  # tf.nn's, for a loop over a distribute strategy
sys.modules[__name__ + ".init"] = init  # `import unigrad.nn.init` and `from unigrad.nn import init`
__all__ += ["Buffer", "DataParallel", "Parameter", "SyncBatchNorm", "compute_average_loss", "functional_call", "functional", "init", "parallel", "utils"] + _lazy.__all__
