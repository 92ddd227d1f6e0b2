"""ug.static: PaddlePaddle's paddle.static.InputSpec, the inputs paddle.jit.to_static and
paddle.jit.save describe a model by (ug.jit.to_static, ug.jit.save(..., input_spec=[...]))."""
from . import _C


class InputSpec:
    """paddle.static.InputSpec(shape, dtype="float32", name=None): None (or -1) in shape is a
    dim of any size, which a saved model keeps symbolic."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = tuple(None if d is None or d == -1 else int(d) for d in shape)
        self.dtype = getattr(_C, dtype) if isinstance(dtype, str) else dtype
        self.name = name

    def example(self):
        """A tensor of this spec, 1 in each dim of any size."""
        return _C.zeros(*[1 if d is None else d for d in self.shape], dtype=self.dtype)

    def any_size_dims(self):
        return {i for i, d in enumerate(self.shape) if d is None}

    def __repr__(self):
        return f"InputSpec(shape={self.shape}, dtype={self.dtype}, name={self.name!r})"


__all__ = ["InputSpec"]
