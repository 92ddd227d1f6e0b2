"""ug.pmap: JAX's pmap over one device per process. Each process of the job (ug launch -n N)
is one position of the mapped axis: the arguments carry a leading axis of size 1 (this
process's device), f runs once on their slices, and inside it ug.lax's collectives (psum,
pmean, pmax, pmin, all_gather, axis_index) over axis_name reach every process of the group. A
process that joined no group is one device on its own, as JAX on one device: the map is a vmap
of size 1, whose axis the collectives reduce over."""
import contextlib
import functools

from . import _C
from .tree import tree_map

# axis name -> (process group (None: the default group), how many vmap axis bindings were open
# when the pmap began), while a pmap runs
_bound = {}


def pmap_group(axis_name, op):
    """(process group,) when the innermost binding of the axis name is a pmap's, None when it is
    a vmap's (opened after the pmap began), or JAX's NameError when neither binds it."""
    in_vmap = _C._lax.axis_depth(axis_name)
    if axis_name in _bound and in_vmap <= _bound[axis_name][1]:
        return (_bound[axis_name][0],)
    if not in_vmap:
        raise NameError(f"[{op}] unbound axis name: {axis_name!r} (call {op} inside "
                        f"ug.vmap(f, axis_name=...) or ug.pmap(f, axis_name=...))")
    return None


@contextlib.contextmanager
def _bind(axis_name, group):
    if axis_name in _bound:
        raise ValueError(f"[pmap] axis name {axis_name!r} is already bound by an enclosing pmap")
    _bound[axis_name] = (group, _C._lax.open_axes())
    try:
        yield
    finally:
        del _bound[axis_name]


def local_device_count():
    """Devices this process maps over: one (the CPU) per process."""
    return 1


def pmap(fun, axis_name=None, in_axes=0, out_axes=0, group=None):
    """jax.pmap(fun, axis_name): fun on this process's slice of the mapped axis, its results
    with that axis (size 1) put back. in_axes/out_axes must be 0; group defaults to the world."""
    if in_axes != 0 or out_axes != 0:
        raise NotImplementedError("[pmap] only in_axes=0 and out_axes=0 are supported")

    def take(x):
        if not isinstance(x, _C.Tensor):
            return x
        if x.dim() == 0 or x.shape[0] != local_device_count():
            raise ValueError(f"[pmap] a mapped argument needs a leading axis of size {local_device_count()} "
                             f"(this process's devices), got shape {list(x.shape)}")
        return x[0]

    @functools.wraps(fun)
    def mapped(*args):
        if not _C.distributed.is_initialized():
            if group is not None:
                raise RuntimeError("[pmap] a group needs ug.distributed.init_process_group() first")
            from .transforms import vmap
            tree_map(take, list(args))  # the leading axes' check
            axes = tuple(tree_map(lambda a: 0 if isinstance(a, _C.Tensor) else None, a) for a in args)
            return vmap(fun, in_axes=axes, axis_name=axis_name)(*args)
        with _bind(axis_name, group) if axis_name is not None else contextlib.nullcontext():
            out = fun(*tree_map(take, list(args)))
        return tree_map(lambda y: y.unsqueeze(0) if isinstance(y, _C.Tensor) else y, out)

    return mapped


__all__ = ["pmap", "local_device_count"]
