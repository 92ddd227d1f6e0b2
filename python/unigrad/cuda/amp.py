"""ug.cuda.amp: torch.cuda.amp's names. This build has no CUDA device: as in PyTorch's CPU
build, the region warns and is disabled, and the scaler warns and passes gradients through."""
from .. import amp as _amp


class autocast(_amp.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """torch.cuda.amp.GradScaler: ug.amp.GradScaler on the CUDA device."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: ug.amp.custom_fwd on the CUDA device."""
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """torch.cuda.amp.custom_bwd: ug.amp.custom_bwd on the CUDA device."""
    return _amp.custom_bwd(bwd, device_type="cuda")
