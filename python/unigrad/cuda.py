"""ug.cuda: what torch.cuda answers. This build has the CPU backend only: the memory functions
answer for the CUDA device when one exists and raise a clear RuntimeError otherwise, as
torch's CPU build does; ug.cuda.amp.autocast warns and is disabled."""
import types

from . import _C, amp as _amp, memory as _memory


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
    return _memory.allocated(_cuda(device))


def max_memory_allocated(device=None):
    return _memory.max_allocated(_cuda(device))


def memory_reserved(device=None):
    return _memory.reserved(_cuda(device))


def max_memory_reserved(device=None):
    return _memory.max_reserved(_cuda(device))


def memory_stats(device=None):
    return _memory.stats(_cuda(device))


def reset_peak_memory_stats(device=None):
    _memory.reset_peak(_cuda(device))


def memory_summary(device=None, abbreviated=False):
    return _memory.summary(_cuda(device))


def empty_cache():
    if is_available():
        _memory.empty_cache("cuda")


class _CudaAutocast(_amp.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def _cuda_grad_scaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
    return _amp.GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


amp = types.SimpleNamespace(autocast=_CudaAutocast, GradScaler=_cuda_grad_scaler)
