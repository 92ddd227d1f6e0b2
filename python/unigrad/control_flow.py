"""JAX's structured control flow (jax.lax.cond, while_loop, fori_loop, scan), also as ug.cond,
ug.while_loop, ug.fori_loop and ug.scan. Eagerly they run as Python would. Under ug.jit a
predicate computed from traced values cannot pick a branch while tracing: cond is then one op
(ug/autograd/cond.h), an ONNX If whose program runs the branch its predicate picks at each run,
as jax.lax.cond branches under jax.jit; under vmap with a batched predicate, both
branches run and their results are selected elementwise (what jax.lax.cond does there). Loops
with bounds known at trace time unroll into the program. Everything is built from ops, so
gradients and vmap follow; a while_loop whose condition is traced is one op (ug/ops/control_flow.h)
that a program runs as an ONNX Loop node. Eagerly too they check what their functions return
as JAX does: cond's and switch's branches agree, a loop's carry keeps its structure, shapes
and dtypes."""
import contextlib
import functools

from . import _C
from . import compiled as _compiled
from . import debug as _debug
from .autograd import no_grad
from .tree import tree_flatten, tree_map, tree_unflatten

_is_traced = _C._jit.is_traced


def _known(pred):
    """pred as a Python bool when its value is known now, else None (traced or batched)."""
    if not isinstance(pred, _C.Tensor):
        return bool(pred)
    if _is_traced(pred) or _C._functional.is_batched(pred):
        return None  # the op checks its size (here a read of a traced size, tf.function's retracing)
    if pred.numel() != 1:
        raise TypeError(f"[cond] the predicate must be a scalar, got shape {tuple(pred.shape)}")
    return bool(pred)


def _spec(x):
    """A leaf's dtype and shape as text; a Python number's are those of the tensor it becomes."""
    if not isinstance(x, _C.Tensor):
        if not isinstance(x, (bool, int, float, complex)) and not hasattr(x, "__array_interface__"):
            return type(x).__name__
        x = _C.tensor(x)
    return f"{str(x.dtype).removeprefix('unigrad.')} {list(x.shape)}"


@contextlib.contextmanager
def _discarded():
    """Runs a function only for the structure, shapes and dtypes of its result: without
    gradients, outside any trace (a compiled program neither records nor replays its ops), and
    with the global random state put back, so that the program's draws do not depend on it."""
    rng = _C.get_rng_state()
    try:
        with no_grad(), _debug.silenced(), _C._jit.OutsideTrace():
            yield
    finally:
        _C.set_rng_state(rng)


def _check_branches(name, outs, labels, leaves=True):
    """A TypeError unless every branch's result has the first's structure, shapes and dtypes
    (without `leaves`: structure only, where the op compared the leaves)."""
    first, first_def = tree_flatten(outs[0])
    for out, label in zip(outs[1:], labels[1:]):
        leaves_of, d = tree_flatten(out)
        if d != first_def:
            raise TypeError(f"[{name}] the branches must return the same structure: {labels[0]} gives {first_def}, "
                            f"{label} gives {d}")
        if not leaves:
            continue
        for n, (x, y) in enumerate(zip(first, leaves_of)):
            tx, ty = _spec(x), _spec(y)
            if tx != ty:
                raise TypeError(f"[{name}] the branches must return the same shapes and dtypes: leaf {n} is {tx} "
                                f"from {labels[0]} but {ty} from {label}")


def _check_carry(name, fun_name, init, out):
    """A TypeError unless out, what fun_name returned as the loop's carry, has init's structure,
    shapes and dtypes."""
    li, di = tree_flatten(init)
    lo, do = tree_flatten(out)
    if di != do:
        raise TypeError(f"[{name}] {fun_name} must return a carry of the structure {di}, got {do}")
    for n, (x, y) in enumerate(zip(li, lo)):
        tx, ty = _spec(x), _spec(y)
        if tx != ty:
            raise TypeError(f"[{name}] {fun_name} must return a carry of the same shapes and dtypes: leaf {n} is "
                            f"{tx} but {fun_name} gives {ty}")


def _run_checked(name, branches, labels, taken, operands):
    """branches[taken](*operands), the other branches run too (discarded) for JAX's check that
    every branch returns the same structure, shapes and dtypes. Not while a program records
    (ug.jit's trace, an export): it would keep their random draws, and run them at every call."""
    outs = [None] * len(branches)
    outs[taken] = branches[taken](*operands)
    if _compiled.is_compiling() or _C._jit.capturing():
        return outs[taken]
    with _discarded():
        for i, branch in enumerate(branches):
            if i != taken:
                outs[i] = branch(*operands)
    _check_branches(name, outs, labels)
    return outs[taken]


_COND_LABELS = ("true_fun", "false_fun")


def cond(pred, true_fun, false_fun, *operands):
    """jax.lax.cond: true_fun(*operands) if pred else false_fun(*operands). Both branches must
    return the same structure, shapes and dtypes: eagerly the branch not taken runs too, without
    gradients, to check it (JAX traces both)."""
    known = _known(pred)
    if known is not None:
        return _run_checked("cond", (true_fun, false_fun), _COND_LABELS, int(not known), operands)
    if not _C._functional.is_batched(pred) and getattr(_compiled._tracing, "depth", 0):
        return _traced_cond(pred, true_fun, false_fun, operands)
    # Batched, or traced for an ONNX file (whose Where answers for every input): both branches.
    a, b = true_fun(*operands), false_fun(*operands)
    _check_branches("cond", [a, b], _COND_LABELS)
    p = pred.reshape(()).bool() if isinstance(pred, _C.Tensor) else pred
    return tree_map(lambda x, y: _C.where(p, x, y), a, b)


def _traced_cond(pred, true_fun, false_fun, operands, labels=_COND_LABELS):
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

    try:
        outs = _C._jit.cond(pred, flat(true_fun, "true_fun"), flat(false_fun, "false_fun"),
                            [_as_tensor(v) for v in leaves])
    except TypeError as e:
        if labels is _COND_LABELS:
            raise
        # switch's tree of conds: its message names the branches
        message = str(e).replace("[cond]", "[switch]").replace("true_fn", labels[0]).replace("false_fn", labels[1])
        raise type(e)(message) from None
    # ug::lax::cond compared the leaves (reading their sizes here would tie the program to them)
    _check_branches("cond", [results["true_fun"], results["false_fun"]], labels, leaves=False)
    return tree_unflatten(tree_flatten(results["true_fun"])[1], outs)


def _switch_labels(branches):
    return [f"branches[{i}]" for i in range(len(branches))]


def switch(index, branches, *operands):
    """jax.lax.switch: branches[clamp(index)](*operands); every branch runs (as cond's) to check
    that they return the same structure, shapes and dtypes."""
    if not branches:
        raise ValueError("[switch] needs at least one branch")
    if not isinstance(index, _C.Tensor) or not (_is_traced(index) or _C._functional.is_batched(index)):
        i = min(max(int(index), 0), len(branches) - 1)
        return _run_checked("switch", branches, _switch_labels(branches), i, operands)
    index = index.reshape(()).clamp(0, len(branches) - 1)
    if not _C._functional.is_batched(index) and getattr(_compiled._tracing, "depth", 0):
        return _traced_switch(index, branches, operands)
    # Batched, or traced for an ONNX file: every branch, and a where (as cond's).
    outs = [b(*operands) for b in branches]
    _check_branches("switch", outs, _switch_labels(branches))
    result = outs[-1]
    for i in range(len(outs) - 2, -1, -1):
        result = tree_map(lambda x, y, i=i: _C.where(index == i, x, y), outs[i], result)
    return result


def _traced_switch(index, branches, operands):
    """switch on an index only the program's runs know: a tree of traced conds that runs the one
    branch the index picks, as JAX's switch does (every branch and a where would let an untaken
    branch's inf or NaN into the gradient, and take its random draws)."""
    def pick(lo, hi, i, *ops):
        if hi - lo == 1:
            return branches[lo](*ops)
        mid = (lo + hi) // 2
        pred, lower, upper = i < mid, functools.partial(pick, lo, mid), functools.partial(pick, mid, hi)
        known = _known(pred)
        if known is not None:  # a program's run calls the half taken back, the index known
            return (lower if known else upper)(i, *ops)
        if _C._functional.is_batched(pred):  # a vmap around the program's run
            return cond(pred, lower, upper, i, *ops)
        return _traced_cond(pred, lower, upper, (i, *ops), (f"branches[{lo}]", f"branches[{mid}]"))
    return pick(0, len(branches), index, *operands)


def while_loop(cond_fun, body_fun, init_val):
    """jax.lax.while_loop: val = body_fun(val) while cond_fun(val). cond_fun gives a boolean
    scalar, body_fun a carry of init_val's structure, shapes and dtypes. Under ug.jit (and
    ug.onnx.export) the loop is one op, run by the program as an ONNX Loop node;
    under vmap with a batched condition it runs until every example is done, updating only the
    examples whose condition holds. Forward mode differentiates it; reverse mode raises, as in
    JAX, once the trip count is only known at run time."""
    c = cond_fun(init_val)
    # A condition batched by a vmap around a ug.jit trace (vmap of jit) is one example's in the
    # program: the loop is one op below, which the trace runs, and the program under that vmap
    # runs, until no example goes on.
    if (isinstance(c, _C.Tensor) and _C._functional.is_batched(c)
            and _C._functional.batch_level(c) > getattr(_compiled._tracing, "outer_level", 0)):
        return _batched_while_loop(cond_fun, body_fun, init_val)
    # Under a trace or an export the loop is one op, the trip count the data's: a Python loop
    # would record the trace's own trip count.
    if not (isinstance(c, _C.Tensor) and (_is_traced(c) or _C._jit.capturing())):
        val = init_val
        while bool(_checked_predicate(c)):
            new = body_fun(val)
            _check_carry("while_loop", "body_fun", val, new)
            val = new
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


def _checked_predicate(c):
    """An eager loop's condition: a tensor must be a boolean scalar, as a compiled loop's."""
    return _scalar_predicate(c) if isinstance(c, _C.Tensor) else c


def _scalar_predicate(c):
    c = _as_tensor(c)
    # a traced condition's size is the op's to check (ug::while_loop): reading it here would tie
    # the program to the trace's sizes
    if c.dtype != _C.bool or (not _is_traced(c) and c.numel() != 1):
        raise TypeError(f"[while_loop] cond_fun must return a boolean scalar, got {_spec(c)}")
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
    """jax.lax.fori_loop: val = body_fun(i, val) for i in range(lower, upper), i a 0-d integer
    tensor (lower's dtype; int64 for a Python int). Bounds known at trace time unroll; traced
    (or batched) bounds make it a while_loop over (i, val), as in JAX (forward mode only, then)."""
    if any(isinstance(b, _C.Tensor) and (_is_traced(b) or _C._functional.is_batched(b)) for b in (lower, upper)):
        lower, upper = _as_tensor(lower), _as_tensor(upper)

        def body(carry):
            i, val = carry
            return i + 1, body_fun(i, val)

        return while_loop(lambda carry: carry[0] < upper, body, (lower, init_val))[1]
    index_dtype = _as_tensor(lower).dtype  # the index the traced-bounds loop counts with
    val = init_val
    for i in range(int(lower), int(upper)):
        new = body_fun(_C.tensor(i, dtype=index_dtype), val)
        _check_carry("fori_loop", "body_fun", val, new)
        val = new
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
    if length == 0:
        return init, _no_steps(f, init, leaves, treedef)
    order = range(length - 1, -1, -1) if reverse else range(length)
    carry, ys = init, [None] * length
    for i in order:
        x = tree_unflatten(treedef, [leaf[i] for leaf in leaves]) if leaves else None
        new, ys[i] = f(carry, x)
        _check_carry("scan", "f", carry, new)
        carry = new
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_def = tree_flatten(ys[0])[1]
    stacked = [_C.stack([_as_tensor(y[k]) for y in y_leaves]) for k in range(len(y_leaves[0]))]
    return carry, tree_unflatten(y_def, stacked)


def _no_steps(f, init, leaves, treedef):
    """The ys of a scan of no steps: JAX stacks zero per-step outputs into arrays with a leading
    dim of 0. Their structure, shapes and dtypes come from one step on stand-ins (zeros as the
    slices of xs, init as the carry), run without gradients, outside any trace and discarded
    (under ug.jit its ops and draws stay out of the program, as JAX runs no step); its carry is
    checked as a real step's."""
    with _discarded():
        x = tree_unflatten(treedef, [_as_tensor(leaf).new_zeros(tuple(leaf.shape[1:])) for leaf in leaves]) \
            if leaves else None
        carry, y = f(init, x)
        _check_carry("scan", "f", init, carry)
    y_leaves, y_def = tree_flatten(y)
    return tree_unflatten(y_def, [v.new_zeros((0, *v.shape)) for v in map(_as_tensor, y_leaves)])


def _as_tensor(x):
    return x if isinstance(x, _C.Tensor) else _C.tensor(x)


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan"]
