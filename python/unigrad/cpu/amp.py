"""ug.cpu.amp: torch.cpu.amp's names (torch.amp's with device_type="cpu")."""
from .. import amp as _amp


class autocast(_amp.autocast):
    """torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """torch.cpu.amp.GradScaler: ug.amp.GradScaler on the CPU."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
