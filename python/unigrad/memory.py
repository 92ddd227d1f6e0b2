"""ug.memory: allocator statistics and a memory limit on every device (torch offers the
statistics for CUDA only), under unigrad's short names, torch's names and TensorFlow's."""
from . import _C

_mem = _C._memory


def _device(device):
    """"cpu", ug.device(...), or TensorFlow's "CPU:0" / "GPU:0"."""
    if isinstance(device, str) and ":" in device and device.split(":")[0] in ("CPU", "GPU"):
        kind, index = device.split(":")
        return "cpu" if kind == "CPU" else f"cuda:{index}"
    return "cpu" if device is None else device


def stats(device="cpu"):
    """Every counter: allocated, max_allocated, reserved, max_reserved, num_allocs, num_frees,
    cache_hits, allocated_total, freed_total, num_ooms."""
    return _mem.stats(_device(device))


def allocated(device="cpu"):
    """Bytes held by live tensors."""
    return stats(device)["allocated"]


def max_allocated(device="cpu"):
    """Peak of allocated() since start or the last reset_peak()."""
    return stats(device)["max_allocated"]


def reserved(device="cpu"):
    """Bytes taken from the system: live tensors plus the allocator's cache."""
    return stats(device)["reserved"]


def max_reserved(device="cpu"):
    return stats(device)["max_reserved"]


def reset_peak(device="cpu"):
    """Peaks start again from what is in use now."""
    _mem.reset_peak(_device(device))


def empty_cache(device="cpu"):
    """Returns cached free blocks to the system."""
    _mem.empty_cache(_device(device))


def summary(device="cpu", abbreviated=False):
    """The table torch.cuda.memory_summary prints: current, peak, total allocated and freed
    bytes, reserved and cached bytes, allocation counts, out-of-memory errors and the limit."""
    return _mem.summary(_device(device))


def set_limit(bytes, device="cpu"):  # noqa: A002  (the limit in bytes; 0 or None removes it)
    """Caps the bytes live tensors may hold: an allocation past it raises ug.OutOfMemoryError
    naming the op, the shape and the dtype, instead of the system killing the process."""
    _mem.set_limit(0 if bytes is None else int(bytes), _device(device))


def get_limit(device="cpu"):
    """The limit set_limit set, 0 for none."""
    return _mem.limit(_device(device))


# torch.cuda's names, for every device.
memory_stats = stats
memory_allocated = allocated
max_memory_allocated = max_allocated
memory_reserved = reserved
max_memory_reserved = max_reserved
reset_peak_memory_stats = reset_peak
memory_summary = summary


# TensorFlow's names (tf.config.experimental).
def get_memory_info(device="CPU:0"):
    """{'current': bytes in use, 'peak': the most since start or reset_memory_stats}."""
    s = stats(device)
    return {"current": s["allocated"], "peak": s["max_allocated"]}


def reset_memory_stats(device="CPU:0"):
    reset_peak(device)
