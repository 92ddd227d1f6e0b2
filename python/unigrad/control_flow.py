"""JAX's structured control flow (jax.lax.cond, while_loop, fori_loop, scan), also as ug.cond,
ug.while_loop, ug.fori_loop and ug.scan. Eagerly they run as Python would. Under ug.jit a
predicate computed from traced values cannot pick a branch while tracing: cond is then one op
(ug/autograd/cond.h) that the program runs by calling back the branch its predicate picks at
each run, as jax.lax.cond branches under jax.jit; under vmap with a batched predicate, both
branches run and their results are selected elementwise (what jax.lax.cond does there). Loops
with bounds known at trace time unroll into the program. Everything is built from ops, so
gradients and vmap follow; a while_loop whose condition is traced is one op (ug/ops/control_flow.h)
that a program runs as an ONNX Loop node."""
from . import _C
from . import compiled as _compiled
from ._C.errors import NoBatchingRule
from .tree import tree_flatten, tree_map, tree_unflatten

_is_traced = _C._jit.is_traced


def _known(pred):
    """pred as a Python bool when its value is known now, else None (traced or batched)."""
    if not isinstance(pred, _C.Tensor):
        return bool(pred)
    if pred.numel() != 1:
        raise TypeError(f"[cond] the predicate must be a scalar, got shape {tuple(pred.shape)}")
    if _is_traced(pred) or _C._functional.is_batched(pred):
        return None
    return bool(pred)


def _check_same(name, a, b):
    la, da = tree_flatten(a)
    lb, db = tree_flatten(b)
    if da != db:
        raise TypeError(f"[{name}] the branches return different structures: {da} and {db}")
    for x, y in zip(la, lb):
        tx = (tuple(x.shape), x.dtype) if isinstance(x, _C.Tensor) else type(x).__name__
        ty = (tuple(y.shape), y.dtype) if isinstance(y, _C.Tensor) else type(y).__name__
        if tx != ty:
            raise TypeError(f"[{name}] the branches return different types: {tx} and {ty}")


def cond(pred, true_fun, false_fun, *operands):
    """jax.lax.cond: true_fun(*operands) if pred else false_fun(*operands)."""
    known = _known(pred)
    if known is not None:
        return (true_fun if known else false_fun)(*operands)
    if not _C._functional.is_batched(pred) and getattr(_compiled._tracing, "depth", 0):
        return _traced_cond(pred, true_fun, false_fun, operands)
    # Batched, or traced for an ONNX file (whose Where answers for every input): both branches.
    a, b = true_fun(*operands), false_fun(*operands)
    _check_same("cond", a, b)
    p = pred.reshape(()).bool() if isinstance(pred, _C.Tensor) else pred
    return tree_map(lambda x, y: _C.where(p, x, y), a, b)


def _traced_cond(pred, true_fun, false_fun, operands):
    """cond on a predicate only the program's runs know: one op over the flat operands that runs
    the branch the predicate picks (C++ ug::lax::cond, which also runs the other once, here, to
    check that both give the same)."""
    leaves, treedef = tree_flatten(operands)
    results = {}

    def flat(fun, name):
        def run(xs):
            out = fun(*tree_unflatten(treedef, list(xs)))
            results[name] = out
            return [_as_tensor(v) for v in tree_flatten(out)[0]]
        return run

    outs = _C._jit.cond(pred, flat(true_fun, "true_fun"), flat(false_fun, "false_fun"),
                        [_as_tensor(v) for v in leaves])
    _check_same("cond", results["true_fun"], results["false_fun"])
    return tree_unflatten(tree_flatten(results["true_fun"])[1], outs)


def switch(index, branches, *operands):
    """jax.lax.switch: branches[clamp(index)](*operands)."""
    if not branches:
        raise ValueError("[switch] needs at least one branch")
    if not isinstance(index, _C.Tensor) or not (_is_traced(index) or _C._functional.is_batched(index)):
        i = min(max(int(index), 0), len(branches) - 1)
        return branches[i](*operands)
    index = index.reshape(()).clamp(0, len(branches) - 1)
    outs = [b(*operands) for b in branches]
    result = outs[-1]
    for i in range(len(outs) - 2, -1, -1):
        _check_same("switch", outs[i], result)
        result = tree_map(lambda x, y, i=i: _C.where(index == i, x, y), outs[i], result)
    return result


def while_loop(cond_fun, body_fun, init_val):
    """jax.lax.while_loop: val = body_fun(val) while cond_fun(val). cond_fun gives a boolean
    scalar, body_fun a carry of init_val's structure, shapes and dtypes. Under ug.jit (and
    ug.onnx.export) the loop is one op, run by the program as an ONNX Loop node;
    under vmap with a batched condition it runs until every example is done, updating only the
    examples whose condition holds. Forward mode differentiates it; reverse mode raises, as in
    JAX, once the trip count is only known at run time."""
    c = cond_fun(init_val)
    if isinstance(c, _C.Tensor) and _C._functional.is_batched(c):
        if _C._functional.batch_level(c) <= getattr(_compiled._tracing, "outer_level", 0):
            # Batched by a vmap around a ug.jit trace (vmap of jit): the program cannot see the
            # other examples, so vmap maps the jitted function example by example.
            raise NoBatchingRule("[while_loop] a condition batched by a vmap outside ug.jit")
        return _batched_while_loop(cond_fun, body_fun, init_val)
    # Under a trace or an export the loop is one op, the trip count the data's: a Python loop
    # would record the trace's own trip count.
    if not (isinstance(c, _C.Tensor) and (_is_traced(c) or _C._jit.capturing())):
        val = init_val
        while bool(c):
            val = body_fun(val)
            c = cond_fun(val)
        return val
    leaves, treedef = tree_flatten(init_val)
    leaves = [_as_tensor(x) for x in leaves]

    def flat_cond(flat):
        return _scalar_predicate(cond_fun(tree_unflatten(treedef, flat)))

    def flat_body(flat):
        out, out_def = tree_flatten(body_fun(tree_unflatten(treedef, flat)))
        if out_def != treedef:
            raise TypeError(f"[while_loop] body_fun must return a carry of the structure {treedef}, got {out_def}")
        return [_as_tensor(x) for x in out]

    return tree_unflatten(treedef, _C._jit.while_loop(flat_cond, flat_body, leaves))


def _scalar_predicate(c):
    c = _as_tensor(c)
    if c.numel() != 1 or c.dtype != _C.bool:
        raise TypeError(f"[while_loop] cond_fun must return a boolean scalar, got {c.dtype} {tuple(c.shape)}")
    return c.reshape(())


def _any_example(c):
    """An unbatched predicate that holds while the batched one holds for some example."""
    while _C._functional.is_batched(c):
        c = _C._functional.physical(c).any()
    return c


def _batched_while_loop(cond_fun, body_fun, init_val):
    # jax.lax.while_loop's batching rule: loop while any example's condition holds, and give
    # the examples whose condition no longer holds their carry back. Every leaf becomes batched
    # first, so that the carry keeps its type across iterations.
    p = _scalar_predicate(cond_fun(init_val))
    init = tree_map(lambda x: _C.where(p, _as_tensor(x), _as_tensor(x)), init_val)

    def body(val):
        holds = _scalar_predicate(cond_fun(val))
        return tree_map(lambda new, old: _C.where(holds, _as_tensor(new), old), body_fun(val), val)

    return while_loop(lambda val: _any_example(_scalar_predicate(cond_fun(val))), body, init)


def fori_loop(lower, upper, body_fun, init_val):
    """jax.lax.fori_loop: val = body_fun(i, val) for i in range(lower, upper). Bounds known at
    trace time unroll; traced (or batched) bounds make it a while_loop over (i, val), as in JAX
    (forward mode only, then)."""
    if any(isinstance(b, _C.Tensor) and (_is_traced(b) or _C._functional.is_batched(b)) for b in (lower, upper)):
        lower, upper = _as_tensor(lower), _as_tensor(upper)

        def body(carry):
            i, val = carry
            return i + 1, body_fun(i, val)

        return while_loop(lambda carry: carry[0] < upper, body, (lower, init_val))[1]
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """jax.lax.scan: carry, y = f(carry, x) over the leading axis of xs; returns (carry, stacked ys)."""
    leaves, treedef = tree_flatten(xs)
    sizes = {x.shape[0] for x in leaves}
    if len(sizes) > 1:
        raise ValueError(f"[scan] the leaves of xs have different leading sizes: {sorted(sizes)}")
    if length is None:
        if not sizes:
            raise ValueError("[scan] give xs or length")
        length = sizes.pop()
    elif sizes and sizes != {length}:
        raise ValueError(f"[scan] length is {length} but xs has leading size {sizes.pop()}")
    order = range(length - 1, -1, -1) if reverse else range(length)
    carry, ys = init, [None] * length
    for i in order:
        x = tree_unflatten(treedef, [leaf[i] for leaf in leaves]) if leaves else None
        carry, ys[i] = f(carry, x)
    if length == 0 or ys[0] is None:
        return carry, None
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_def = tree_flatten(ys[0])[1]
    stacked = [_C.stack([_as_tensor(y[k]) for y in y_leaves]) for k in range(len(y_leaves[0]))]
    return carry, tree_unflatten(y_def, stacked)


def _as_tensor(x):
    return x if isinstance(x, _C.Tensor) else _C.tensor(x)


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan"]
