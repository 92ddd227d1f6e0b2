"""ug.nn.parallel: torch's DistributedDataParallel, over ug::distributed::Reducer, and
DataParallel."""
import contextlib

from .. import _C
from ..autograd import is_grad_enabled
from ..tree import tree_leaves
from . import Module


class DistributedDataParallel(Module):
    """Wraps module for data-parallel training: rank 0's parameters and buffers are copied to
    every rank now; each backward then averages the gradients over the group, in buckets of
    about bucket_cap_mb MiB whose all_reduce starts as soon as the bucket's gradients are in.
    gradient_as_bucket_view=True makes each .grad a view of its bucket after the first backward
    (no copies of the averages back; a .grad held across steps sees later steps' values).
    device_ids, output_device and dim are accepted for torch's signature (CPU: one device)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False,
                 gradient_as_bucket_view=False, **kwargs):
        super().__init__()
        if bucket_cap_mb is None or bucket_cap_mb <= 0:
            raise ValueError(f"[DistributedDataParallel] bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group
        # torch's flag, which no_sync() clears: a plain attribute, so a compiled step guards on it
        self.require_backward_grad_sync = True
        _C.distributed._broadcast_module_state(module, process_group, True)
        self.reducer = _C.distributed.Reducer(list(module.parameters()), process_group,
                                              int(bucket_cap_mb * 1024 * 1024), find_unused_parameters,
                                              gradient_as_bucket_view)

    def forward(self, *args, **kwargs):
        self.reducer.prepare_for_forward()
        if self.broadcast_buffers and is_grad_enabled():
            _C.distributed._broadcast_module_state(self.module, self.process_group, False)
        out = self.module(*args, **kwargs)
        self.reducer.require_sync = self.require_backward_grad_sync
        self.reducer.prepare_for_backward([t for t in tree_leaves(out) if isinstance(t, _C.Tensor)])
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside only accumulates gradients locally; the first backward after it
        averages the accumulated ones."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


class DataParallel(Module):
    """torch.nn.DataParallel: splits each batch over the devices of device_ids in one process.
    unigrad runs on the CPU alone, which is one device, so the module runs the whole batch, as
    torch's DataParallel does without CUDA; `module` and the state_dict's "module." prefix are
    torch's. DistributedDataParallel is the way to use several cores or hosts (one process each)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"[DataParallel] expected a Module, got {type(module).__name__}")
        self.module = module
        self.device_ids, self.output_device, self.dim = [], None, dim

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


__all__ = ["DistributedDataParallel", "DataParallel"]
