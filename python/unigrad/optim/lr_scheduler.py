"""ug.optim.lr_scheduler: learning-rate schedules (StepLR, CosineAnnealingLR, OneCycleLR, ...), as torch's."""
from .. import _C
from .._export import export

__all__ = export(_C.optim.lr_scheduler, globals())
