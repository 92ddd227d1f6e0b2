"""JAX's device functions over ug.device: jax.devices, local_devices, default_backend,
default_device, device_put and device_get. New tensors go to the CPU unless a factory is given device=, so the default
backend is the CPU whatever else the build can reach."""
import contextlib

from . import _C
from .tree import tree_map

_KINDS = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda"}  # JAX says "gpu"


def default_backend():
    """Where new tensors go: "cpu" (jax.default_backend())."""
    return "cpu"


def devices(backend=None):
    """The devices of `backend` ("cpu", "cuda" or JAX's "gpu"; default: the default backend's),
    as jax.devices(); a backend this build cannot reach raises RuntimeError, as JAX does."""
    kind = _KINDS.get(default_backend() if backend is None else str(backend).lower())
    if kind is None:
        raise ValueError(f"[devices] unknown backend {backend!r}: use 'cpu', 'cuda' or 'gpu'")
    if kind == "cpu":
        return [_C.device("cpu")]
    count = _C.cuda_device_count()
    if count == 0:
        raise RuntimeError(f"[devices] backend {backend!r} is not available in this build "
                           "(ug.cuda.is_available() is False); the CPU is")
    return [_C.device(f"cuda:{i}") for i in range(count)]


def local_devices(backend=None):
    """This process's devices: all of them (a ug.distributed rank is a process of its own)."""
    return devices(backend)


def default_device(device):
    """jax.default_device: a context in which new tensors go to `device` (None: as outside it);
    ug.device's own context, so the CPU, or an error for a device this build cannot reach."""
    if device is None:
        return contextlib.nullcontext()
    return device if isinstance(device, _C.device) else _C.device(device)


def device_put(x, device=None):
    """x with every leaf on `device` (default: the CPU), as jax.device_put: a tensor already
    there is returned as it is; NumPy arrays and Python numbers become tensors (copied, keeping
    NumPy's dtype where JAX would narrow float64 to float32 without x64)."""
    target = _C.device("cpu") if device is None else _C.device(device) if isinstance(device, str) else device

    def put(leaf):
        if isinstance(leaf, _C.Tensor):
            return leaf if leaf.device == target else leaf.to(target)
        return _C.tensor(leaf).to(target)
    return tree_map(put, x)


def device_get(x):
    """jax.device_get: x with every tensor leaf copied to the host as a NumPy array (other
    leaves as they are)."""
    return tree_map(lambda leaf: leaf.detach().cpu().numpy() if isinstance(leaf, _C.Tensor) else leaf, x)
