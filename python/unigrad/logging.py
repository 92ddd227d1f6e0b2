"""ug.logging: TensorBoard event files and SVG charts of training metrics (ug::logging in C++).

SummaryWriter is torch.utils.tensorboard.SummaryWriter (also at ug.utils.tensorboard);
plot_history draws a Keras-style history, one panel per metric with its validation series.
The module is not ug.log, which is the natural logarithm.
"""
from . import _C
from ._export import export

__all__ = export(_C.logging, globals())
