"""ug.optimizers: Keras's optimizers (keras.optimizers), with Keras's defaults and update rules
(ug::optim::keras in C++); ug.optim has torch's."""
from . import _C
from ._export import export

__all__ = export(_C.optimizers, globals())
