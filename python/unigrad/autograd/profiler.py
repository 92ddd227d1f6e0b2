"""ug.autograd.profiler: torch.autograd.profiler's older spelling of the profiler
(ug.profiler.profile and record_function underneath)."""
from .. import profiler as _profiler

record_function = _profiler.record_function


class profile(_profiler.profile):
    """torch.autograd.profiler.profile(enabled=True, use_cuda=False, record_shapes=False,
    profile_memory=False, with_stack=False): nothing is recorded when not enabled."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, profile_memory=False,
                 with_stack=False, use_cpu=True):
        if use_cuda or use_device not in (None, "cpu") or not use_cpu:
            raise ValueError("[autograd.profiler] only the CPU is profiled (use_cuda=False, use_cpu=True)")
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack)
        self.enabled = enabled

    def start(self):
        if self.enabled:
            super().start()

    def stop(self):
        if self.enabled:
            super().stop()

    def table(self, sort_by="self_cpu_time_total", row_limit=100):
        """key_averages().table(...), as the legacy profiler prints itself."""
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit)
