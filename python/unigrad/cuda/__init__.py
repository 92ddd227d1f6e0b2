"""ug.cuda: what torch.cuda answers. This build has the CPU backend only: the memory functions
answer for the CUDA device when one exists; without one the counters are 0 and memory_stats
is empty, as torch's CPU build answers, and the others raise a clear RuntimeError;
ug.cuda.amp.autocast warns and is disabled."""
from .. import _C, memory as _memory


def is_available():
    return _C.device_available(_C.device("cuda"))


def device_count():
    return _C.cuda_device_count()


def _cuda(device):
    if device is None:
        return "cuda"
    if isinstance(device, int):
        return f"cuda:{device}"
    return device


def memory_allocated(device=None):
    return _memory.allocated(_cuda(device)) if is_available() else 0


def max_memory_allocated(device=None):
    return _memory.max_allocated(_cuda(device)) if is_available() else 0


def memory_reserved(device=None):
    return _memory.reserved(_cuda(device)) if is_available() else 0


def max_memory_reserved(device=None):
    return _memory.max_reserved(_cuda(device)) if is_available() else 0


def memory_stats(device=None):
    return _memory.stats(_cuda(device)) if is_available() else {}


def reset_peak_memory_stats(device=None):
    _memory.reset_peak(_cuda(device))


def memory_summary(device=None, abbreviated=False):
    return _memory.summary(_cuda(device))


def empty_cache():
    if is_available():
        _memory.empty_cache("cuda")


from . import amp  # noqa: E402,F401  (ug.cuda.amp, after the names it does not need)
