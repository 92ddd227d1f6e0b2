"""ug.train: the training state and loops (ug::train in C++): save_checkpoint, load_checkpoint."""
from . import _C
from ._export import export

__all__ = export(_C.train, globals())
