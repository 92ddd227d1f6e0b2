"""ug.lax: JAX's collectives over a pmap axis (jax.lax.psum, pmean, all_gather, axis_index),
each one all_reduce or all_gather of ug.distributed on the axis's process group. They compute
values, not gradients: differentiate inside, then reduce (as data-parallel steps do). The
structured control flow (cond, switch, while_loop, fori_loop, scan) is control_flow.py's."""
from . import _C
from ._C import stop_gradient  # noqa: F401  (jax.lax.stop_gradient)
from .control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from .parallel_map import group_of

_dist = _C.distributed


def _reduce(x, axis_name, op, name):
    group = group_of(axis_name, name)
    out = x.detach().clone()
    _dist.all_reduce(out, op=op, group=group)
    return out


def psum(x, axis_name):
    """The sum of x over every position of the axis."""
    return _reduce(x, axis_name, _dist.ReduceOp.SUM, "psum")


def pmean(x, axis_name):
    """The mean of x over every position of the axis."""
    return _reduce(x, axis_name, _dist.ReduceOp.AVG, "pmean")


def pmax(x, axis_name):
    return _reduce(x, axis_name, _dist.ReduceOp.MAX, "pmax")


def pmin(x, axis_name):
    return _reduce(x, axis_name, _dist.ReduceOp.MIN, "pmin")


def all_gather(x, axis_name):
    """Every position's x, stacked along a new leading axis."""
    group = group_of(axis_name, "all_gather")
    parts = [_C.empty_like(x) for _ in range(_dist.get_world_size(group))]
    _dist.all_gather(parts, x.detach().contiguous(), group=group)
    return _C.stack(parts)


def axis_index(axis_name):
    """This process's position along the axis."""
    return _C.tensor(_dist.get_rank(group_of(axis_name, "axis_index")), dtype=_C.int32)


__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "axis_index", "cond", "switch", "while_loop", "fori_loop",
           "scan"]
