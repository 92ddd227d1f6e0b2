"""ug.callbacks: Keras's training callbacks (keras.callbacks) for model.fit (ug::train in C++)."""
from . import _C
from ._export import export

__all__ = export(_C.callbacks, globals())
