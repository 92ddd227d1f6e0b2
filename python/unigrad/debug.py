"""ug.debug: jax.debug's print and callback and TensorFlow's tf.debugging checks under one name."""
import builtins
import contextlib
import threading

from . import _C
from .tree import tree_flatten, tree_unflatten
from .debugging import check_numerics, disable_check_numerics, enable_check_numerics  # noqa: F401

_silenced = threading.local()


@contextlib.contextmanager
def silenced():
    """No debug callback runs inside: the branches ug.lax.cond runs only to check them."""
    _silenced.depth = getattr(_silenced, "depth", 0) + 1
    try:
        yield
    finally:
        _silenced.depth -= 1


def callback(callback, *args, **kwargs):
    """jax.debug.callback: callback(*args, **kwargs) called now, and at every call of a compiled
    program (ug.jit) that traced it, with that call's tensors (its result is ignored); the
    arguments are pytrees, their tensor leaves filled in at each call."""
    if getattr(_silenced, "depth", 0):
        return
    leaves, treedef = tree_flatten((args, kwargs))
    positions = [i for i, v in enumerate(leaves) if isinstance(v, _C.Tensor)]

    def emit(tensors):
        filled = list(leaves)
        for p, t in zip(positions, tensors):
            filled[p] = t
        call_args, call_kwargs = tree_unflatten(treedef, filled)
        callback(*call_args, **call_kwargs)

    _C._jit.debug_print(emit, [leaves[p] for p in positions])


def print(fmt, *args, **kwargs):  # noqa: A001  (jax.debug.print's name)
    """jax.debug.print: fmt.format(*args, **kwargs) printed now, and at every call of a compiled
    program (ug.jit) that traced it, with that call's values."""
    callback(lambda *a, **k: builtins.print(fmt.format(*a, **k)), *args, **kwargs)


__all__ = ["print", "callback", "check_numerics", "enable_check_numerics", "disable_check_numerics"]
