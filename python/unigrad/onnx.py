"""ug.onnx: export a traced forward pass to ONNX, and load ONNX models as trainable Modules."""
from . import _C
from ._export import export

__all__ = export(_C.onnx, globals())
