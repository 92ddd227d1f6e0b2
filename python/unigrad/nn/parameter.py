"""ug.nn.Parameter: a tensor that a module registers as trainable when assigned to it."""
from .. import _C
from .lazy import UninitializedBuffer, UninitializedParameter  # noqa: F401  (torch.nn.parameter's)


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and _C.nn._is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """Parameter(data, requires_grad=True) returns data's values as a leaf tensor marked as a
    parameter (sharing memory with data), as torch.nn.Parameter does."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        return _C.nn._make_parameter(data, requires_grad)


class _BufferMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and _C.nn._buffer_persistent(obj) is not None


class Buffer(metaclass=_BufferMeta):
    """Buffer(data, persistent=True) returns data, detached (sharing its memory), marked so that
    assigning it to a module attribute registers it as a buffer, in the state_dict unless
    persistent=False, as torch.nn.Buffer does."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"[Buffer] data must be a Tensor, got {type(data).__name__}")
        return _C.nn._make_buffer(data, persistent)


def functional_call(module, parameters_and_buffers, args=(), kwargs=None):
    """Calls module(*args, **kwargs) with the given tensors standing in for its parameters
    and buffers of those names, leaving the module as it was (torch.func.functional_call)."""
    if not isinstance(args, tuple):
        args = (args,)
    with _C.nn._ParameterSwap(module, parameters_and_buffers):
        return module(*args, **(kwargs or {}))
