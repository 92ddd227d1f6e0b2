"""ug.profiler: where the time and memory of a region go, per op (torch.profiler's API).

    with ug.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        with ug.profiler.record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")   # opens in Perfetto / chrome://tracing

Over a training loop, torch's schedule records some steps only (prof.step() after each), and
on_trace_ready receives each recorded cycle (tensorboard_trace_handler writes it to a folder).
"""
import enum
import functools
import gzip
import os
import socket
import time

from . import _C

_p = _C._profiler


class ProfilerActivity(enum.Enum):
    """What to profile: unigrad's ops run on the CPU (torch's CUDA activity has no counterpart yet)."""
    CPU = "cpu"


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step (torch.profiler.ProfilerAction)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule: after skip_first steps, cycles of `wait` steps not profiled,
    `warmup` steps not recorded (torch warms its tracer up there) and `active` steps recorded, the
    last of which hands the cycle to on_trace_ready; `repeat` cycles (0: until the loop ends)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"[profiler.schedule] invalid wait={wait}, warmup={warmup}, active={active}, "
                         f"repeat={repeat}, skip_first={skip_first} (active must be positive, the rest >= 0)")

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """torch.profiler.tensorboard_trace_handler: an on_trace_ready that writes each cycle's
    Chrome trace to dir_name as {worker_name}.{nanoseconds}.pt.trace.json[.gz] (worker_name:
    host_pid), the files TensorBoard's profiler plugin and Perfetto read."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(path)
    return handler


class profile:
    """Profiles every op call (and record_function range) between __enter__ and __exit__, or
    start() and stop(); with a schedule, only the steps it records (step() after each), each
    cycle handed to on_trace_ready. Profiles do not nest: starting one inside another raises
    RuntimeError."""

    def __init__(self, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 on_trace_ready=None, schedule=None):
        activities = [ProfilerActivity.CPU] if activities is None else list(activities)
        if any(a is not ProfilerActivity.CPU for a in activities):
            raise ValueError(f"[profiler] activities must be ProfilerActivity.CPU, got {activities}")
        self._options = (bool(record_shapes), bool(profile_memory), bool(with_stack))
        self._on_trace_ready = on_trace_ready
        self._schedule = schedule
        self._profile = None
        self._stopped = False
        self.step_num = 0

    def _action(self):
        return self._schedule(self.step_num) if self._schedule else ProfilerAction.RECORD

    def start(self):
        self.step_num = 0
        if self._action() in _RECORDING:
            self._record()

    def _record(self):
        self._profile = _p.Profile(*self._options)
        self._stopped = False

    def _save(self):
        self._profile.stop()
        self._stopped = True
        if self._on_trace_ready is not None:
            self._on_trace_ready(self)

    def _recording(self):
        return self._profile is not None and not self._stopped

    def step(self):
        """The end of a step of the loop: the schedule's next action starts or saves a cycle."""
        before = self._action()
        self.step_num += 1
        after = self._action()
        if self._recording() and (before is ProfilerAction.RECORD_AND_SAVE or after not in _RECORDING):
            self._save()
        if after in _RECORDING and not self._recording():
            self._record()

    def stop(self):
        if self._schedule is not None:
            if self._recording():
                self._save()
            return
        self._running()
        self._save()

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
