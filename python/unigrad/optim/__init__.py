"""ug.optim: optimizers, usable imperatively (step) and functionally (init/update, like optax)."""
from .. import _C
from .._export import export

__all__ = export(_C.optim, globals())

from . import lr_scheduler  # noqa: E402,F401
