"""ug.lax: JAX's collectives (jax.lax.psum, pmean, pmax, pmin, all_gather, psum_scatter,
ppermute, axis_index) over a named axis. The innermost binding of the name decides what they
reduce over: inside ug.vmap(f, axis_name=...) the examples of that vmap (ops of
ug/ops/axis_collectives.h, with derivatives as JAX's), inside ug.pmap the processes of its
group (all_reduce or all_gather of ug.distributed; psum and pmean differentiate as JAX's, the
others give values without gradients). The structured control flow (cond, switch,
while_loop, fori_loop, scan) is control_flow.py's; bitcast_convert_type reinterprets bytes."""
from . import _C
from .autograd import Function
from .control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from .parallel_map import pmap_group
from .tree import tree_map

_dist = _C.distributed
_vmap = _C._lax


def stop_gradient(x):
    """jax.lax.stop_gradient: x, a pytree, with each tensor leaf cut from differentiation (no
    gradient flows back through it, in any mode); other leaves as they are."""
    return tree_map(lambda v: _C.stop_gradient(v) if isinstance(v, _C.Tensor) else v, x)


def bitcast_convert_type(operand, new_dtype):
    """jax.lax.bitcast_convert_type: operand's bytes as a new tensor of new_dtype (a smaller dtype
    adds a last dim, a larger one takes away a last dim of the size ratio); Tensor.view(dtype) is
    torch's view of the same storage."""
    return _C.bitcast_convert_type(operand, new_dtype)


def _names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _one(axis_name, op):
    """The single axis name a collective other than the reductions takes."""
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"[{op}] over several axes at once ({axis_name!r}) is not supported; "
                                  "nest one call per axis")
    return names[0]


def _reduce(x, axis_name, op, name):
    """x (a pytree; a Python number stands for a value every position holds) reduced over each
    named axis in turn."""
    for axis in _names(axis_name):
        group = pmap_group(axis, name)
        if group is None:
            x = tree_map(lambda v: getattr(_vmap, name)(v, axis) if isinstance(v, _C.Tensor)
                         else v * _vmap.axis_size(axis) if name == "psum" else v, x)
        else:
            x = tree_map(lambda v: _all_reduce(v, op, group[0], name), x)
    return x


def _all_reduce(v, op, group, name):
    if not isinstance(v, _C.Tensor):
        return v * _dist.get_world_size(group) if name == "psum" else v
    if name in ("psum", "pmean") and v.requires_grad:
        return _ProcessReduce.apply(v, op, group)
    out = v.detach().clone()
    _dist.all_reduce(out, op=op, group=group)
    return out


class _ProcessReduce(Function):
    """psum or pmean over pmap's processes, differentiable as JAX's: the transpose of a sum over
    the processes is the sum of the cotangents over them (of a mean, their mean). Every process
    runs the backward's all_reduce, in the order its backward reaches it, as it ran the forward's."""

    @staticmethod
    def forward(ctx, v, op, group):
        ctx.op, ctx.group = op, group
        out = v.detach().clone()
        _dist.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        out = grad.detach().clone()
        _dist.all_reduce(out, op=ctx.op, group=ctx.group)
        return out, None, None


def psum(x, axis_name):
    """The sum of x over every position of the axis (a tuple of names: over each); psum(1, name)
    is the axis size."""
    return _reduce(x, axis_name, _dist.ReduceOp.SUM, "psum")


def pmean(x, axis_name):
    """The mean of x over every position of the axis."""
    return _reduce(x, axis_name, _dist.ReduceOp.AVG, "pmean")


def pmax(x, axis_name):
    return _reduce(x, axis_name, _dist.ReduceOp.MAX, "pmax")


def pmin(x, axis_name):
    return _reduce(x, axis_name, _dist.ReduceOp.MIN, "pmin")


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every position's x, stacked along a new dim `axis` (tiled: concatenated along dim `axis`)."""
    axis_name = _one(axis_name, "all_gather")
    group = pmap_group(axis_name, "all_gather")
    if group is None:
        return tree_map(lambda v: _vmap.all_gather(v, axis_name, axis, tiled), x)
    if axis != 0 or tiled:
        raise NotImplementedError("[all_gather] over a pmap axis: only axis=0 and tiled=False are supported")
    return tree_map(lambda v: _gather_processes(v, group[0]), x)


def _gather_processes(x, group):
    parts = [_C.empty_like(x) for _ in range(_dist.get_world_size(group))]
    _dist.all_gather(parts, x.detach().contiguous(), group=group)
    return _C.stack(parts)


def psum_scatter(x, axis_name, *, scatter_dimension=0, tiled=False):
    """psum, then position i keeps the i-th slice of the sum along scatter_dimension (tiled: the
    i-th block). Over a vmap axis only."""
    axis_name = _vmap_only(axis_name, "psum_scatter")
    return tree_map(lambda v: _vmap.psum_scatter(v, axis_name, scatter_dimension, tiled), x)


def ppermute(x, axis_name, perm):
    """Position dst gets position src's x for each (src, dst) in perm, zeros where no pair sends
    to it. Over a vmap axis only."""
    axis_name = _vmap_only(axis_name, "ppermute")
    perm = [(int(s), int(d)) for s, d in perm]
    return tree_map(lambda v: _vmap.ppermute(v, axis_name, perm), x)


def _vmap_only(axis_name, op):
    axis_name = _one(axis_name, op)
    if pmap_group(axis_name, op) is not None:
        raise NotImplementedError(f"[{op}] over a pmap axis is not supported (only over a vmap's)")
    return axis_name


def axis_index(axis_name):
    """This position along the axis (int32)."""
    axis_name = _one(axis_name, "axis_index")
    group = pmap_group(axis_name, "axis_index")
    if group is None:
        return _vmap.axis_index(axis_name)
    return _C.tensor(_dist.get_rank(group[0]), dtype=_C.int32)


def _starts(op, operand, start_indices, allow_negative_indices):
    """The starts as tensors; a negative int start is refused where negative starts are not
    allowed, as JAX refuses it (a tensor start is clamped)."""
    starts = []
    for d, i in enumerate(start_indices):
        if not isinstance(i, _C.Tensor):
            if int(i) < 0 and not allow_negative_indices and d < operand.dim():
                raise ValueError(f"[{op}] index {int(i)} is out of bounds for dimension {operand.shape[d]} "
                                 "if allow_negative_indices=False")
            i = _C.tensor(int(i))
        starts.append(i)
    return starts


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """jax.lax.dynamic_slice: the block of slice_sizes at start_indices (ints or integer scalar
    tensors: a loop counter in a compiled loop); a negative start counts from the end, then
    each start is clamped so that the block fits."""
    starts = _starts("dynamic_slice", operand, start_indices, allow_negative_indices)
    return _vmap.dynamic_slice(operand, starts, list(slice_sizes), allow_negative_indices)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """jax.lax.dynamic_update_slice: operand with the block at start_indices replaced by update
    (its rank); starts as dynamic_slice's."""
    starts = _starts("dynamic_update_slice", operand, start_indices, allow_negative_indices)
    return _vmap.dynamic_update_slice(operand, update, starts, allow_negative_indices)


def _in_dim(operand, index, axis):
    starts = [0] * operand.dim()
    starts[axis % operand.dim()] = index
    return starts


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """jax.lax.dynamic_slice_in_dim: dynamic_slice along one axis, the others whole."""
    sizes = list(operand.shape)
    sizes[axis % operand.dim()] = slice_size
    return dynamic_slice(operand, _in_dim(operand, start_index, axis), sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """jax.lax.dynamic_index_in_dim: the slice at index along axis (kept as a dim of 1 by default)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else out.squeeze(axis)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """jax.lax.dynamic_update_slice_in_dim: dynamic_update_slice at start_index along axis."""
    return dynamic_update_slice(operand, update, _in_dim(operand, start_index, axis))


def dynamic_update_index_in_dim(operand, update, index, axis):
    """jax.lax.dynamic_update_index_in_dim: the slice at index along axis replaced by update
    (with or without that dim)."""
    if update.dim() == operand.dim() - 1:
        update = update.unsqueeze(axis % operand.dim())
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def map(f, xs):  # noqa: A001  (jax.lax.map's name)
    """jax.lax.map: f over the leading axis of xs (a tree), one example at a time: scan with no
    carry, compiled as one loop under jit."""
    return scan(lambda carry, x: (carry, f(x)), None, xs)[1]


def select(pred, on_true, on_false):
    """jax.lax.select: where(pred, on_true, on_false), the three of one shape."""
    if tuple(pred.shape) != tuple(on_true.shape) or tuple(on_true.shape) != tuple(on_false.shape):
        raise ValueError(f"[select] pred, on_true and on_false must have one shape, got {tuple(pred.shape)}, "
                         f"{tuple(on_true.shape)} and {tuple(on_false.shape)}")
    return _C.where(pred, on_true, on_false)


def top_k(operand, k):
    """jax.lax.top_k: the k largest values along the last axis and their indices, largest first."""
    values, indices = operand.topk(k, -1)
    return values, indices


__all__ = ["stop_gradient", "psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "axis_index",
           "cond", "switch", "while_loop", "fori_loop", "scan", "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim",
           "dynamic_index_in_dim", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "map", "select",
           "top_k", "bitcast_convert_type"]
