"""ug.profiler: where the time and memory of a region go, per op (torch.profiler's API).

    with ug.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        with ug.profiler.record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")   # opens in Perfetto / chrome://tracing
"""
import enum
import functools

from . import _C

_p = _C._profiler


class ProfilerActivity(enum.Enum):
    """What to profile: unigrad's ops run on the CPU (torch's CUDA activity has no counterpart yet)."""
    CPU = "cpu"


class profile:
    """Profiles every op call (and record_function range) between __enter__ and __exit__, or
    start() and stop(). Profiles do not nest: starting one inside another raises RuntimeError."""

    def __init__(self, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 on_trace_ready=None):
        activities = [ProfilerActivity.CPU] if activities is None else list(activities)
        if any(a is not ProfilerActivity.CPU for a in activities):
            raise ValueError(f"[profiler] activities must be ProfilerActivity.CPU, got {activities}")
        self._options = (bool(record_shapes), bool(profile_memory), bool(with_stack))
        self._on_trace_ready = on_trace_ready
        self._profile = None
        self._stopped = False

    def start(self):
        self._profile = _p.Profile(*self._options)
        self._stopped = False

    def stop(self):
        self._running().stop()
        self._stopped = True
        if self._on_trace_ready is not None:
            self._on_trace_ready(self)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def events(self):
        """Each op call as a dict: name, user_range, start_us, end_us, thread, depth,
        input_shapes, input_dtypes, bytes, stack."""
        return self._finished().events()

    def key_averages(self, group_by_input_shape=False):
        """The calls summed per op (and per input shapes): rows with count, cpu_time_total,
        self_cpu_time_total, cpu_time (the average), memory and input_shapes; .table() prints them."""
        return self._finished().key_averages(group_by_input_shape)

    def export_chrome_trace(self, path):
        """Writes the Chrome trace-event JSON of the profile to path."""
        self._finished().export_chrome_trace(str(path))

    def _running(self):
        if self._profile is None or self._stopped:
            raise RuntimeError("[profiler] stop(): the profiler is not running")
        return self._profile

    def _finished(self):
        if self._profile is None or not self._stopped:
            raise RuntimeError("[profiler] the profiler has not run to its end yet: leave the with block first")
        return self._profile


class record_function:
    """A named range in the profile, as a context manager or a decorator (free when no profiler runs)."""

    def __init__(self, name):
        self.name = name
        self._range = None

    def __enter__(self):
        self._range = _p.RecordFunction(self.name)
        return self

    def __exit__(self, *exc):
        self._range = None  # the range ends when its C++ object goes
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapped
