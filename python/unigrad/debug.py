"""ug.debug: jax.debug's print and TensorFlow's tf.debugging checks under one name."""
import builtins

from . import _C
from .debugging import check_numerics, disable_check_numerics, enable_check_numerics  # noqa: F401


def print(fmt, *args, **kwargs):  # noqa: A001  (jax.debug.print's name)
    """jax.debug.print: fmt.format(*args, **kwargs) printed now, and at every call of a compiled
    program (ug.jit) that traced it, with that call's values."""
    names = list(kwargs)
    values = [*args, *kwargs.values()]
    positions = [i for i, v in enumerate(values) if isinstance(v, _C.Tensor)]

    def emit(tensors):
        filled = list(values)
        for p, t in zip(positions, tensors):
            filled[p] = t
        builtins.print(fmt.format(*filled[:len(args)], **dict(zip(names, filled[len(args):]))))

    _C._jit.debug_print(emit, [values[p] for p in positions])


__all__ = ["print", "check_numerics", "enable_check_numerics", "disable_check_numerics"]
