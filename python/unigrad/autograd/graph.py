"""ug.autograd.graph: torch.autograd.graph's hooks on what the ops save for backward.

    with ug.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = f(x)          # each tensor an op saves for backward is kept as pack(t)
    y.backward()          # and handed back to the op's derivative as unpack(pack(t))

The hooks are the engine's (the ones activation checkpointing is built on), installed on the
calling thread; the innermost entered hooks apply.
"""
import contextlib
import threading

from .. import _C

_ag = _C._autograd
_disabled = threading.local()


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> anything is called for every tensor an op saves
    for backward while it is entered; unpack_hook(that) -> Tensor gives it back in backward."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook
        self._hooks = _ag.SavedTensorHooks(pack_hook, unpack_hook)

    def __enter__(self):
        message = getattr(_disabled, "message", None)
        if message is not None:
            raise RuntimeError(message)
        self._hooks.enter()
        return self

    def __exit__(self, *exc):
        self._hooks.exit()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keeps a copy of every saved tensor in CPU memory and moves it back to its device in
    backward (torch's way to trade transfer time for accelerator memory). pin_memory is
    accepted for torch's signature; CPU memory needs no pinning here."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            return tensor.device, tensor.detach().to("cpu").clone()

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Inside, entering saved_tensors_hooks raises RuntimeError(error_message): for code that
    cannot work with them."""
    previous = getattr(_disabled, "message", None)
    _disabled.message = error_message
    try:
        yield
    finally:
        _disabled.message = previous
