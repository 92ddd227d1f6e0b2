"""JAX-style function transforms (grad, value_and_grad, vjp, jvp, jacrev, jacfwd, hessian)
and TensorFlow's GradientTape, over the C++ engine. This module only flattens pytrees and
converts Python numbers; the differentiation happens in C++ (ug/autograd/functional.h)."""
import contextlib
import enum
import warnings

from . import _C
from .tree import broadcast_prefix, tree_flatten, tree_unflatten

_f = _C._functional


def _as_tensor(x):
    if isinstance(x, _C.Tensor):
        return x
    if isinstance(x, (bool, int, float)) or hasattr(x, "__array_interface__"):
        t = _C.tensor(x)
        return t.float() if not t.is_floating_point() else t
    raise TypeError(f"[grad] expected tensors or numbers as differentiated inputs, got {type(x).__name__}")


def _argnums(argnums):
    return ((argnums,), False) if isinstance(argnums, int) else (tuple(argnums), True)


def _flat_call(fun, args, kwargs, nums, defs, has_aux, aux_box):
    """A function of the flat list of differentiated leaves, as the C++ transforms take."""
    def flat_fn(xs):
        new, pos = list(args), 0
        for i, d in zip(nums, defs):
            new[i] = tree_unflatten(d, xs[pos:pos + d.num_leaves])
            pos += d.num_leaves
        out = fun(*new, **kwargs)
        if has_aux:
            out, aux_box[0] = out
        leaves, aux_box[1] = tree_flatten(out)
        return [_as_tensor(v) for v in leaves]
    return flat_fn


def _flat_arguments(args, nums, op, floats_only=False):
    """The tensor leaves of the differentiated arguments, in order, and their treedefs.
    floats_only: refuse integer and boolean leaves, as jax.grad and the Jacobians do."""
    flat, defs = [], []
    for i in nums:
        if i >= len(args):
            raise IndexError(f"[{op}] argnums {i} out of range for {len(args)} positional arguments")
        leaves, d = tree_flatten(args[i])
        if floats_only:
            for v in leaves:
                _check_floating(op, i, v)
        flat += [_as_tensor(v) for v in leaves]
        defs.append(d)
    return flat, defs


def _check_floating(op, i, v):
    """A TypeError for an integer or boolean value (a Python int or bool, a numpy value or a
    tensor) among the differentiated arguments: made a float, a Python int would be
    differentiated silently, where JAX and torch.func refuse it."""
    if isinstance(v, _C.Tensor):
        what = None if v.is_floating_point() or v.is_complex() else \
            f"a tensor of dtype {str(v.dtype).removeprefix('unigrad.')}"
    elif isinstance(v, (bool, int)):
        what = f"a Python {type(v).__name__} ({v!r})"
    else:
        what = f"a numpy value of dtype {v.dtype}" if getattr(getattr(v, "dtype", None), "kind", None) in ("b", "i", "u") else None
    if what:
        raise TypeError(f"[{op}] argument {i} holds {what}; only floating point and complex inputs can be "
                        "differentiated (pass a float, or a floating point tensor)")


def _per_argument(defs, flat):
    """The flat leaves split back into one tree per differentiated argument."""
    trees, pos = [], 0
    for d in defs:
        trees.append(tree_unflatten(d, flat[pos:pos + d.num_leaves]))
        pos += d.num_leaves
    return trees


def value_and_grad(fun, argnums=0, has_aux=False):
    """value_and_grad(f)(*args) -> (f(*args), df/dargs[argnums]) with pytree arguments."""
    nums, many = _argnums(argnums)

    def wrapped(*args, **kwargs):
        flat, defs = _flat_arguments(args, nums, "grad", floats_only=True)
        aux_box = [None, None]
        fn = _flat_call(fun, args, kwargs, nums, defs, has_aux, aux_box)
        outs, grads = _f.value_and_grad(fn, flat, list(range(len(flat))))
        value = tree_unflatten(aux_box[1], outs) if aux_box[1] is not None else outs[0]
        trees = _per_argument(defs, grads)
        g = tuple(trees) if many else trees[0]
        return ((value, aux_box[0]) if has_aux else value), g

    return wrapped


def grad(fun, argnums=0, has_aux=False):
    """grad(f)(*args): the gradient of a function returning one element, as jax.grad."""
    vg = value_and_grad(fun, argnums, has_aux)

    def wrapped(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapped


def vjp(fun, *primals, has_aux=False):
    """(fun(*primals), vjp_fn): vjp_fn(cotangents) returns one cotangent per primal."""
    flat, defs = _flat_arguments(primals, range(len(primals)), "vjp")
    aux_box = [None, None]
    fn = _flat_call(fun, primals, {}, range(len(primals)), defs, has_aux, aux_box)
    outs, pullback = _f.vjp(fn, flat)
    out_def = aux_box[1]

    def vjp_fn(cotangents):
        leaves, d = tree_flatten(cotangents)
        if d != out_def:
            raise ValueError("[vjp] cotangents must have the structure of the outputs")
        return tuple(_per_argument(defs, pullback([_as_tensor(c) for c in leaves])))

    out = tree_unflatten(out_def, outs)
    return (out, vjp_fn, aux_box[0]) if has_aux else (out, vjp_fn)


def jvp(fun, primals, tangents):
    """(fun(*primals), the derivative of fun at primals along tangents)."""
    if len(primals) != len(tangents):
        raise ValueError("[jvp] primals and tangents must have the same length")
    flat, flat_t, defs = [], [], []
    for p, t in zip(primals, tangents):
        leaves, d = tree_flatten(p)
        t_leaves, td = tree_flatten(t)
        if td != d:
            raise ValueError("[jvp] each tangent must have the structure of its primal")
        flat += [_as_tensor(v) for v in leaves]
        flat_t += [_as_tensor(v) for v in t_leaves]
        defs.append(d)
    aux_box = [None, None]
    fn = _flat_call(fun, primals, {}, range(len(primals)), defs, False, aux_box)
    outs, touts = _f.jvp(fn, flat, flat_t)
    return tree_unflatten(aux_box[1], outs), tree_unflatten(aux_box[1], touts)


def linearize(fun, *primals):
    """jax.linearize (torch.func.linearize): (fun(*primals), f_jvp), f_jvp(*tangents) giving the
    forward-mode derivative of fun at primals along tangents. (Unlike JAX's, f_jvp runs fun's
    forward again at each call instead of keeping a linear program.)"""
    output = fun(*primals)

    def f_jvp(*tangents):
        return jvp(fun, primals, tangents)[1]
    return output, f_jvp


def _jacobian(transform, fun, argnums, has_aux):
    """transform(flat_fn, leaves, i), one of the C++ Jacobian transforms, over the pytree
    arguments argnums of fun and the pytree it returns, as jax.jacrev and jax.jacfwd: the result
    has fun's output structure, each leaf the structure of the arguments (a tuple of them for a
    tuple argnums) holding arrays of shape out.shape + arg.shape."""
    nums, many = _argnums(argnums)

    def wrapped(*args, **kwargs):
        flat, defs = _flat_arguments(args, nums, "jacobian", floats_only=True)
        aux_box = [None, None]
        fn = _flat_call(fun, args, kwargs, nums, defs, has_aux, aux_box)
        per_leaf = [transform(fn, flat, j) for j in range(len(flat))]  # per input leaf: one per output
        out_def = aux_box[1]
        if not per_leaf:
            raise ValueError("[jacobian] the differentiated arguments hold no tensors")
        results = []
        for k in range(out_def.num_leaves):
            trees = _per_argument(defs, [jac[k] for jac in per_leaf])
            results.append(tuple(trees) if many else trees[0])
        jac = tree_unflatten(out_def, results)
        return (jac, aux_box[0]) if has_aux else jac

    return wrapped


def jacrev(fun, argnums=0, has_aux=False):
    """The Jacobian by reverse mode: shape out.shape + arg.shape for each output and argument leaf."""
    return _jacobian(_f.jacrev, fun, argnums, has_aux)


def jacfwd(fun, argnums=0, has_aux=False):
    """The Jacobian by forward mode: shape out.shape + arg.shape for each output and argument leaf."""
    return _jacobian(_f.jacfwd, fun, argnums, has_aux)


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False):
    """jacfwd(jacrev(fun)): second derivatives, shape out.shape + arg.shape + arg.shape per
    leaf (arg.shape + arg.shape for a scalar fun), nested as jax.hessian nests them."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


class UnconnectedGradients(enum.Enum):
    """tf.UnconnectedGradients: what GradientTape answers for a source the target does not
    depend on: None (NONE) or zeros shaped like the source (ZERO)."""
    NONE = "none"
    ZERO = "zero"


def _zero_unconnected(value, where):
    try:
        return UnconnectedGradients(value) is UnconnectedGradients.ZERO
    except ValueError:
        raise ValueError(f"[GradientTape.{where}] unconnected_gradients must be 'none', 'zero' or a "
                         f"ug.UnconnectedGradients, got {value!r}") from None


class GradientTape:
    """tf.GradientTape: `with ug.GradientTape() as tape:` records ops on watched tensors (and
    on tensors that require grad, unless watch_accessed_variables=False: then only tensors
    passed to watch() get gradients); tape.gradient(target, sources) returns the gradients."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = _C._GradientTape(persistent, watch_accessed_variables)

    def __enter__(self):
        self._tape.start()
        return self

    def __exit__(self, *exc):
        self._tape.stop()
        return False

    def watch(self, tensor):
        for t in tree_flatten(tensor)[0]:
            self._tape.watch(t)

    def watched_variables(self):
        return tuple(self._tape.watched())

    @contextlib.contextmanager
    def stop_recording(self):
        prev = _C._autograd.grad_mode_state()
        _C._autograd.set_grad_enabled(False)
        try:
            yield
        finally:
            _C._autograd.restore_grad_mode(prev)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
        """Gradients of target (a tensor or a pytree of them; non-scalar targets are summed)
        with respect to sources: one tensor, a list or a dict. Unused sources give None, or
        zeros with unconnected_gradients="zero"."""
        zero = _zero_unconnected(unconnected_gradients, "gradient")
        targets, _ = tree_flatten(target)
        leaves, d = tree_flatten(sources)
        weights = tree_flatten(output_gradients)[0] if output_gradients is not None else []
        grads = self._tape.gradient(targets, leaves, weights, zero)
        return tree_unflatten(d, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d target / d source for each source (one tensor, a list or a dict), shaped
        target.shape + source.shape. parallel_iterations and experimental_use_pfor are
        TensorFlow's execution hints and change nothing here."""
        zero = _zero_unconnected(unconnected_gradients, "jacobian")
        leaves, d = tree_flatten(sources)
        return tree_unflatten(d, self._tape.jacobian(target, leaves, zero))

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """For target [B, T...] and source [B, S...] whose batch rows are independent:
        result[b] = d target[b] / d source[b], shaped [B, T..., S...]."""
        zero = _zero_unconnected(unconnected_gradients, "batch_jacobian")
        return self._tape.batch_jacobian(target, source, zero)


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, *, randomness="error"):
    """vmap(f)(*args, **kwargs): f mapped over a batch dim of its arguments, as jax.vmap.
    in_axes is an int, None (not mapped) or a tuple with one entry per positional argument,
    each a pytree prefix of its argument (an int or None there stands for every leaf below
    it); keyword arguments are mapped over their dim 0. out_axes is a pytree prefix of the
    result, None for an output that does not depend on the batch. axis_name names the mapped
    axis while f runs, for ug.lax's collectives (ug.lax.psum(x, axis_name) sums over the
    batch). axis_size gives the batch size when no argument is mapped. randomness says what
    draws from the global generator (ug.rand, dropout) do inside f, as torch.vmap's: "error"
    raises, "same" draws once for every example, "different" draws for each example apart;
    draws from a key (ug.random.normal(key, shape)) follow their key."""
    if isinstance(in_axes, dict):
        raise TypeError("[vmap] in_axes must be an int, None or a tuple with one entry per positional argument, "
                        "got a dict (wrap it in a tuple for a dict argument)")

    def wrapped(*args, **kwargs):
        axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"[vmap] in_axes has {len(axes)} entries for {len(args)} positional arguments")
        names = sorted(kwargs)
        trees = [*args, *(kwargs[k] for k in names)]
        axes += (0,) * len(names)
        flat, flat_axes, defs = [], [], []
        for i, (a, ax) in enumerate(zip(trees, axes)):
            leaves, d = tree_flatten(a)
            flat += [_as_tensor(v) for v in leaves]
            flat_axes += broadcast_prefix(ax, a, "vmap", f"in_axes[{i}]" if i < len(args) else f"{names[i - len(args)]}")
            defs.append(d)
        out_box = [None, None]

        def flat_fn(xs):
            new, pos = [], 0
            for d in defs:
                new.append(tree_unflatten(d, xs[pos:pos + d.num_leaves]))
                pos += d.num_leaves
            out = fun(*new[:len(args)], **dict(zip(names, new[len(args):])))
            leaves, out_box[0] = tree_flatten(out)
            out_box[1] = broadcast_prefix(out_axes, out, "vmap", "out_axes")
            return [_as_tensor(v) for v in leaves]

        fallbacks = _f.vmap_fallbacks()
        outs = _f.vmap(flat_fn, flat, flat_axes, lambda: out_box[1], axis_size, axis_name, randomness)
        if _f.vmap_fallbacks() != fallbacks:  # as torch.func.vmap warns of its slow fallback
            warnings.warn(f"{_f.last_vmap_fallback()}: the function ran once per example instead of once "
                          "batched (the same results, more slowly)", UserWarning, stacklevel=2)
        return tree_unflatten(out_box[0], outs)

    return wrapped
