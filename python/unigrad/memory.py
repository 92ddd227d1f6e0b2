"""ug.memory: allocator statistics on every device (torch offers them for CUDA only)."""
from . import _C


def allocated(device="cpu"):
    """Bytes held by live tensors."""
    return _C._memory.stats(device)["allocated"]


def max_allocated(device="cpu"):
    """Peak of allocated() since start or the last reset_peak()."""
    return _C._memory.stats(device)["max_allocated"]


def reserved(device="cpu"):
    """Bytes taken from the system: live tensors plus the allocator's cache."""
    return _C._memory.stats(device)["reserved"]


def stats(device="cpu"):
    return _C._memory.stats(device)


def reset_peak(device="cpu"):
    _C._memory.reset_peak(device)


def empty_cache(device="cpu"):
    """Returns cached free blocks to the system."""
    _C._memory.empty_cache(device)


def summary(device="cpu"):
    return _C._memory.summary(device)
