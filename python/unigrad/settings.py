"""torch's process-wide switches that concern the device and the kernels' choices, with
unigrad's answers. unigrad computes on the CPU alone, and every kernel gives the same bits on
every run with the same inputs and thread count (no atomics in floating sums, fixed splits of
parallel loops), so deterministic mode has nothing to forbid; float32 products are always
computed in float32 (OpenBLAS's sgemm), whatever precision is allowed."""
from . import _C

_deterministic = {"mode": False, "warn_only": False}
_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def use_deterministic_algorithms(mode, *, warn_only=False):
    """torch.use_deterministic_algorithms: recorded; every unigrad kernel is deterministic already."""
    if not isinstance(mode, bool):
        raise TypeError(f"[use_deterministic_algorithms] mode must be a bool, got {type(mode).__name__}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["mode"] and _deterministic["warn_only"]


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: "highest", "high" or "medium". Recorded; unigrad's float32
    products stay float32 (lower precision is asked for explicitly, with ug.autocast)."""
    global _matmul_precision
    if precision not in _MATMUL_PRECISIONS:
        raise ValueError(f"[set_float32_matmul_precision] expected one of {', '.join(_MATMUL_PRECISIONS)}, "
                         f"got {precision!r}")
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision


def get_default_device():
    """torch.get_default_device: where factories put new tensors, the CPU."""
    return _C.device("cpu")


def set_default_device(device):
    """torch.set_default_device: the CPU (or None) only; a device that is not available raises."""
    if device is not None and _C.device(device) != _C.device("cpu"):
        raise RuntimeError(f"[set_default_device] device {device} is not available: unigrad computes on the CPU; "
                           "place tensors with device= or .to() once a backend for it exists")


__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "get_default_device", "set_default_device"]
