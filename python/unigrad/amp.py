"""ug.amp: automatic mixed precision, PyTorch's torch.amp.

`autocast` runs the products and convolutions inside it in a 16-bit dtype and the numerically
sensitive ops (softmax, norms, losses, sums, exp/log) in float32, each op as the op table says
(`policy(name)`); `GradScaler` scales a float16 loss so that small gradients do not underflow.
The state and the scaler live in C++ (ug::AutocastGuard, ug::amp::GradScaler).
"""
import collections.abc
import contextlib
import functools
import warnings

from . import _C

_amp = _C._amp

is_autocast_enabled = _amp.is_autocast_enabled
set_autocast_enabled = _amp.set_autocast_enabled
get_autocast_dtype = _amp.get_autocast_dtype
set_autocast_dtype = _amp.set_autocast_dtype


def policy(op):
    """What the op table says `op` does under autocast: 'lower_precision', 'float32' or 'none'."""
    return _amp.autocast_policy(op)


_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16"}


class autocast(contextlib.ContextDecorator):
    """`with ug.autocast("cpu", dtype=ug.bfloat16):` or `@ug.autocast("cpu")`, as torch.autocast.

    Regions nest: an inner `autocast(enabled=False)` turns casting off until it exits. The
    state is per thread. On a device this build lacks (cuda), the region warns and is
    disabled, as PyTorch does. cache_enabled is accepted for torch's signature: unigrad casts
    a weight each time an op needs it (no cast cache).
    """

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if device_type not in _DEFAULT_DTYPE:
            raise ValueError(f"[autocast] device_type must be 'cpu' or 'cuda', got {device_type!r}")
        self.device = device_type
        dtype = _DEFAULT_DTYPE[device_type] if dtype is None else dtype
        self.fast_dtype = getattr(_C, dtype) if isinstance(dtype, str) else dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda" and not _C.device_available(_C.device("cuda")):
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling", stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype not in (_C.bfloat16, _C.float16):
            warnings.warn(f"In autocast, but the target dtype {self.fast_dtype} is not supported (bfloat16 and "
                          "float16 are). Disabling autocast.", stacklevel=2)
            self._enabled = False
        self._saved = []

    def __enter__(self):
        self._saved.append(_amp.region_state(self.device))
        if self._enabled:
            set_autocast_dtype(self.device, self.fast_dtype)
        set_autocast_enabled(self.device, self._enabled)
        return self

    def __exit__(self, *exc):
        # exactly as found: a region that ends inside backward leaves its ops uncast
        _amp.restore_region(self.device, self._saved.pop())
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper


def _cast_inputs(value, device_type, dtype):
    """value with its floating tensors on device_type (not float64) cast to dtype, through lists,
    tuples and dicts (torch.amp's _cast)."""
    if isinstance(value, _C.Tensor):
        castable = value.is_floating_point() and value.dtype != _C.float64 and value.device.type == device_type
        return value.to(dtype) if castable else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_inputs(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """torch.amp.custom_fwd, on an autograd.Function's forward: keeps autocast's state for
    custom_bwd; with cast_inputs, inside an autocast region the forward runs with autocast off on
    its floating inputs cast to that dtype."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(ctx, *args, **kwargs):
        ctx._dtype = get_autocast_dtype(device_type)
        in_region = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = in_region and cast_inputs is None
        if cast_inputs is None or not in_region:
            return fwd(ctx, *args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(ctx, *_cast_inputs(args, device_type, cast_inputs),
                       **_cast_inputs(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """torch.amp.custom_bwd, on the backward of a forward under custom_fwd: runs it with the
    autocast state that forward ran with (backward otherwise runs with autocast off)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(ctx, *args, **kwargs):
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(ctx, *args, **kwargs)
    return decorate_bwd


class GradScaler(_amp.GradScaler):
    """Dynamic loss scaling, torch.amp.GradScaler's API: scale(loss).backward(), step(opt), update().

    device is accepted as torch's first argument ("cpu"; "cuda" warns and disables on a
    build without CUDA, as torch does).
    """

    def __init__(self, device="cpu", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if device == "cuda" and enabled and not _C.device_available(_C.device("cuda")):
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available. Disabling.",
                          stacklevel=2)
            enabled = False
        super().__init__(init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    def scale(self, outputs):
        """outputs times the scale: a tensor, or an iterable of them (nested; a list or tuple
        stays one, another iterable gives a map, as torch's)."""
        if isinstance(outputs, _C.Tensor):
            self._scaled = True
            return super().scale(outputs)
        if isinstance(outputs, collections.abc.Iterable) and not isinstance(outputs, (str, bytes)):
            scaled = map(self.scale, outputs)
            return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
        raise ValueError(f"[GradScaler] outputs must be a Tensor or an iterable of Tensors, got {type(outputs).__name__}")

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step() unless the unscaled gradients hold an inf or NaN. As torch's, it
        refuses a step before any scale() and one whose optimizer has no gradient to check."""
        if args or kwargs:
            raise RuntimeError("[GradScaler] closure use is not supported: call step(optimizer) without arguments")
        if self.is_enabled():
            if not getattr(self, "_scaled", False):
                raise AssertionError("[GradScaler] Attempted step but the scale was never used: call "
                                     "scaler.scale(loss) (and backward) earlier in the iteration")
            if all(p.grad is None for group in optimizer.param_groups for p in group["params"]):
                raise AssertionError("[GradScaler] No inf checks were recorded for this optimizer: none of its "
                                     "parameters has a gradient (was backward run on the scaled loss?)")
        return super().step(optimizer)

    def __reduce__(self):
        """pickle, copy and deepcopy, as torch's scaler allows: a scaler of the same class with
        the same settings and state (not the per-optimizer record of the step in progress,
        which torch's drops too)."""
        return _restore_scaler, (type(self), self.is_enabled(), self.state_dict())


def _restore_scaler(cls, enabled, state):
    scaler = cls.__new__(cls)
    GradScaler.__init__(scaler, enabled=enabled)
    if state:
        scaler.load_state_dict(state)
        scaler._scaled = True  # torch's copy keeps its scale tensor
    return scaler


def on_device(device):
    """torch.<device>.amp's autocast and GradScaler: ug.amp's, bound to one device type (their
    first argument dropped), for ug.cpu.amp and ug.cuda.amp."""
    class DeviceAutocast(autocast):
        __doc__ = f"torch.{device}.amp.autocast(enabled=True, dtype=None, cache_enabled=True)."

        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class DeviceGradScaler(GradScaler):
        __doc__ = f"torch.{device}.amp.GradScaler: ug.amp.GradScaler on the {device} device."

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            super().__init__(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    DeviceAutocast.__name__ = DeviceAutocast.__qualname__ = "autocast"
    DeviceGradScaler.__name__ = DeviceGradScaler.__qualname__ = "GradScaler"
    return DeviceAutocast, DeviceGradScaler
