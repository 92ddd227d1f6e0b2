"""User-defined derivatives in each framework's spelling, over one C++ mechanism
(ug::custom_function, autograd/custom_function.h): PyTorch's torch.autograd.Function, JAX's
custom_vjp and custom_jvp, TensorFlow's tf.custom_gradient. Each runs the function without
recording, on its inputs detached from their history, and links the results to one node
whose backward is the user's rule. What the rule saves goes through the node's saved
tensors: a saved input keeps its history and a saved output comes back as the node's own, so
a rule written with ops differentiates again (higher derivatives), and an in-place change to
a saved tensor before backward raises."""
import functools
import inspect

from . import _C
from .tree import tree_flatten, tree_map, tree_unflatten

_Tensor = _C.Tensor
_ag = _C._autograd


def _no_grad():
    from .autograd import no_grad
    return no_grad()


def _asked(t, tangents=True):
    """Whether a derivative can be asked of t: it requires grad while recording or (tangents) carries
    a forward-mode tangent, or, batched (vmap), the physical tensor under it does (grad of vmap)."""
    if (_ag.is_grad_enabled() and t.requires_grad) or (tangents and _ag.has_tangent(t)):
        return True
    return _C._functional.is_batched(t) and _asked(_C._functional.physical(t), tangents)


def _differentiates(tensors):
    return any(_asked(t) for t in tensors)


class _Links:
    """The detached stand-ins a rule sees, mapped back to what the node must keep: an input's
    original (its history) or a raw output (the node's own output once linked)."""

    def __init__(self, originals):
        self.detached = [t.detach() for t in originals]
        self._original = {id(d): t for d, t in zip(self.detached, originals)}

    def keep(self, t):
        return self._original.get(id(t), t)


def _split_tensors(leaves):
    """(positions of the tensor leaves, those tensors)."""
    where = [i for i, v in enumerate(leaves) if isinstance(v, _Tensor)]
    return where, [leaves[i] for i in where]


def _linked(leaves, exclude=()):
    """Positions of the leaves a custom node links: floating tensors not in `exclude`."""
    return [i for i, v in enumerate(leaves)
            if isinstance(v, _Tensor) and v.is_floating_point() and not any(v is e for e in exclude)]


def _link(name, inputs, out_tree, vjp, jvp, saved, exclude=()):
    """out_tree with its _linked leaves replaced by the node's outputs. vjp(saved, grads) and
    jvp(tangents) see one entry per linked output."""
    leaves, out_def = tree_flatten(out_tree)
    linked = _linked(leaves, exclude)
    if not linked:
        return out_tree
    outs = _ag.custom_function(name, inputs, [leaves[i] for i in linked], vjp, jvp, saved)
    for i, t in zip(linked, outs):
        leaves[i] = t
    return tree_unflatten(out_def, leaves)


def _one_call(name, spelling, args, run):
    """run() (spelling's whole call on args). Under a capture (a jit trace, onnx.export) it is one
    op, whose parts are the ops run makes: a compiled program that autograd records through calls
    spelling again on its new tensors, which links the rule anew (ug::custom_call)."""
    if not _ag.capturing():
        return run()
    leaves, treedef = tree_flatten(list(args))
    where, tensors = _split_tensors(leaves)
    result = []

    def traced():
        result.append(run())
        return _split_tensors(tree_flatten(result[0])[0])[1]

    def again(new):
        new_leaves = list(leaves)
        for i, t in zip(where, new):
            new_leaves[i] = t
        return _split_tensors(tree_flatten(spelling(*tree_unflatten(treedef, new_leaves)))[0])[1]

    _ag.custom_call(name, tensors, traced, again)
    return result[0]


# ---- PyTorch: torch.autograd.Function ---------------------------------------------------------

class FunctionCtx:
    """The ctx of a Function: save_for_backward, save_for_forward, saved_tensors,
    needs_input_grad, mark_non_differentiable, set_materialize_grads; any other attribute is the
    user's."""

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        """What jvp reads back as saved_tensors (torch's spelling)."""
        self._forward_saved = tensors

    @property
    def saved_tensors(self):
        return self._saved

    def saved_tensor(self):
        """PaddlePaddle's PyLayerContext spelling of saved_tensors."""
        return self._saved

    def mark_non_differentiable(self, *outputs):
        self._non_differentiable = outputs

    def set_materialize_grads(self, value):
        # The engine passes zeros for outputs that got no gradient either way.
        self.materialize_grads = value

    def mark_dirty(self, *tensors):
        """The inputs forward wrote in place (and returns): after apply they are the same tensors,
        their history the Function's, as after an in-place op."""
        self._dirty = tensors


def _overrides(cls, name):
    return getattr(cls, name) is not getattr(Function, name)


class Function:
    """torch.autograd.Function: subclass with static forward(ctx, *args) (or forward(*args) and
    setup_context(ctx, inputs, output)) and backward(ctx, *grad_outputs) returning one gradient
    per forward argument (None for those without); jvp(ctx, *tangents) is forward mode's rule.
    Call it with MyFunction.apply(*args)."""

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("[autograd.Function] a Function must define forward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("[autograd.Function] a Function must define backward to be differentiated")

    @staticmethod
    def jvp(ctx, *tangents):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args):
        return _one_call(f"{cls.__name__}Backward", cls.apply, args, lambda: cls._call(args))

    @classmethod
    def _call(cls, args):
        name = cls.__name__
        tensor_pos, tensors = _split_tensors(list(args))
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _Tensor) and _asked(a, tangents=False) for a in args)
        ctx._to_save, ctx._saved, ctx._non_differentiable, ctx._dirty = (), (), (), ()
        links = _Links(tensors)
        call_args = list(args)
        for i, d in zip(tensor_pos, links.detached):
            call_args[i] = d
        with _no_grad():
            if _overrides(cls, "setup_context"):
                output = cls.forward(*call_args)
                cls.setup_context(ctx, tuple(call_args), output)
            else:
                output = cls.forward(ctx, *call_args)
        if not _differentiates(tensors):
            return _dirty_returned(name, output, ctx._dirty, links, None)

        out_leaves = tree_flatten(output)[0]
        linked = _linked(out_leaves, ctx._non_differentiable)

        def vjp(saved, grads):
            ctx._saved = tuple(saved)
            # one gradient per output, as torch passes them: zeros for a tensor not linked (an
            # integer or non-differentiable one), None for a value that is not a tensor
            full = dict(zip(linked, grads))
            grads = [full[i] if i in full else _C.zeros_like(v) if isinstance(v, _Tensor) else None
                     for i, v in enumerate(out_leaves)]
            result = cls.backward(ctx, *grads)
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise TypeError(f"[autograd.Function] {name}.backward returned {len(result)} gradients for "
                                f"{len(args)} forward arguments (give None for those without one)")
            return [result[i] for i in tensor_pos]

        def jvp(tangents):
            # the inputs themselves, with their history: a gradient of the tangent flows into them
            ctx._saved = tuple(links.keep(t) for t in getattr(ctx, "_forward_saved", ()))
            full = [None] * len(args)
            for i, t in zip(tensor_pos, tangents):
                full[i] = t
            out = cls.jvp(ctx, *full)
            return list(out) if isinstance(out, tuple) else [out]

        saved = [links.keep(t) if t is not None else None for t in ctx._to_save]
        if any(t is None for t in saved):  # torch lets save_for_backward take None
            present = [t for t in saved if t is not None]
            rule = vjp

            def vjp(kept, grads):  # noqa: F811 (the same rule, with the Nones put back)
                it = iter(kept)
                return rule([None if t is None else next(it) for t in saved], grads)

            saved = present
        linked_output = _link(f"{name}Backward", tensors, output, vjp, jvp if _overrides(cls, "jvp") else None,
                              saved, ctx._non_differentiable)
        return _dirty_returned(name, output, ctx._dirty, links, linked_output)


def _dirty_returned(name, output, dirty, links, linked_output):
    """The output forward returned, with each input it marked dirty given back as the caller's tensor
    itself; linked (the output with the node's results), that tensor takes the node's history."""
    if not dirty:
        return output if linked_output is None else linked_output
    leaves, out_def = tree_flatten(output)
    if not all(any(leaf is d for leaf in leaves) for d in dirty):
        raise RuntimeError(f"[autograd.Function] {name}: every tensor marked dirty must be returned by forward")
    new = leaves if linked_output is None else tree_flatten(linked_output)[0]
    for i, leaf in enumerate(leaves):
        if any(leaf is d for d in dirty):
            original = links.keep(leaf)
            if original is leaf:
                raise RuntimeError(f"[autograd.Function] {name}: mark_dirty was given a tensor that is not "
                                   "one of forward's inputs")
            if linked_output is not None and new[i] is not leaf:
                _ag.rebase_history(original, new[i], name)
            new[i] = original
    return tree_unflatten(out_def, new)


def once_differentiable(backward):
    """torch.autograd.function.once_differentiable: backward runs without recording, and
    differentiating its result again raises instead of giving a wrong (zero) answer."""
    @functools.wraps(backward)
    def wrapped(ctx, *grads):
        with _no_grad():
            out = backward(ctx, *grads)
        if not _ag.is_grad_enabled() or not any(isinstance(g, _Tensor) and g.requires_grad for g in grads):
            return out

        def refuse(saved, g):
            raise RuntimeError(f"[autograd.Function] trying to differentiate twice a function marked with "
                               f"@once_differentiable ({backward.__qualname__})")

        leaves = [g for g in grads if isinstance(g, _Tensor)]
        return _link("OnceDifferentiableBackward", leaves, out, refuse, None, [])

    return wrapped


# ---- JAX: jax.custom_vjp and jax.custom_jvp ---------------------------------------------------

def _bound_args(fun, args, kwargs):
    """Positional arguments only, as JAX resolves keywords of a custom_vjp/custom_jvp function."""
    if not kwargs:
        return args
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


class _CustomDerivative:
    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)

    def _split(self, args):
        """The differentiable arguments' positions, their flattened trees and tensor leaves."""
        diff = [i for i in range(len(args)) if i not in self.nondiff_argnums]
        trees = [tree_flatten(args[i]) for i in diff]
        tensors = [v for leaves, _ in trees for v in leaves if isinstance(v, _Tensor)]
        return diff, trees, tensors

    def _detached_args(self, args, diff, links):
        """args with the differentiable tensors replaced by their detached stand-ins."""
        it = iter(links.detached)
        new = list(args)
        for i in diff:
            new[i] = tree_map(lambda v: next(it) if isinstance(v, _Tensor) else v, args[i])
        return new

    def __get__(self, obj, objtype=None):  # a decorated method binds as a function does
        return self if obj is None else functools.partial(self, obj)


def _cotangents_per_leaf(name, grads, args, diff, what):
    """One gradient per tensor leaf of the differentiable arguments, from a rule's result:
    a tuple with one entry per such argument, each a tree of its structure (or None: zero)."""
    if not isinstance(grads, (tuple, list)) or len(grads) != len(diff):
        raise TypeError(f"[{name}] {what} must return a tuple with one entry per differentiable argument "
                        f"({len(diff)}), got {type(grads).__name__}"
                        f"{f' of length {len(grads)}' if isinstance(grads, (tuple, list)) else ''}")
    out = []
    for i, g in zip(diff, grads):
        leaves, d = tree_flatten(args[i])
        if g is None:
            out += [None] * sum(isinstance(v, _Tensor) for v in leaves)
            continue
        g_leaves, g_def = tree_flatten(g)
        if g_def != d:
            raise ValueError(f"[{name}] {what}'s entry for argument {i} has structure {g_def}, the argument {d}")
        out += [gv for v, gv in zip(leaves, g_leaves) if isinstance(v, _Tensor)]
    return out


class custom_vjp(_CustomDerivative):
    """jax.custom_vjp: `f = ug.custom_vjp(f)` (or as a decorator), then `f.defvjp(fwd, bwd)`:
    fwd(*args) -> (output, residuals), bwd(*nondiff_args, residuals, cotangent) -> one
    cotangent per differentiable argument. Undifferentiated calls run f itself."""

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        if symbolic_zeros:
            raise NotImplementedError("[custom_vjp] symbolic_zeros=True: zero cotangents arrive as zeros")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_vjp")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _bound_args(self.fun, args, kwargs)
        return _one_call(f"custom_vjp({name})", self, args, lambda: self._call(name, args))

    def _call(self, name, args):
        diff, _, tensors = self._split(args)
        if not _differentiates(tensors):
            return self.fun(*args)
        links = _Links(tensors)
        with _no_grad():
            out, res = self.fwd(*self._detached_args(args, diff, links))
        res_leaves, res_def = tree_flatten(res)
        res_pos, res_tensors = _split_tensors(res_leaves)
        out_leaves, out_def = tree_flatten(out)
        out_pos = [i for i, v in enumerate(out_leaves) if isinstance(v, _Tensor) and v.is_floating_point()]
        nondiff = [args[i] for i in self.nondiff_argnums]

        def vjp(saved, grads):
            kept = list(res_leaves)
            for i, t in zip(res_pos, saved):
                kept[i] = t
            ct = [None] * len(out_leaves)
            for i, g in zip(out_pos, grads):
                ct[i] = g
            result = self.bwd(*nondiff, tree_unflatten(res_def, kept), tree_unflatten(out_def, ct))
            return _cotangents_per_leaf(f"custom_vjp {name}", result, args, diff, "bwd")

        return _link(f"custom_vjp({name})", tensors, out, vjp, None, [links.keep(t) for t in res_tensors])


class custom_jvp(_CustomDerivative):
    """jax.custom_jvp: `f.defjvp(rule)` with rule(*nondiff_args, primals, tangents) ->
    (primal_out, tangent_out), or `f.defjvps(*rules)` with one rule(g, primal_out, *primals) per argument.
    Reverse mode transposes the rule (it is linear in the tangents) by differentiating it
    with respect to its tangents, as JAX derives a custom_jvp function's vjp."""

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.rule = None

    def defjvp(self, jvp, symbolic_zeros=False):
        if symbolic_zeros:
            raise NotImplementedError("[custom_jvp] symbolic_zeros=True: zero tangents arrive as zeros")
        self.rule = jvp
        return jvp

    def defjvps(self, *jvps):
        if self.nondiff_argnums:
            raise NotImplementedError("[custom_jvp] defjvps with nondiff_argnums: use defjvp")

        def rule(primals, tangents):
            out = self.fun(*primals)
            terms = [f(t, out, *primals) for f, t in zip(jvps, tangents) if f is not None and t is not None]
            return out, functools.reduce(lambda a, b: tree_map(lambda x, y: x + y, a, b), terms)

        self.rule = rule

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_jvp")
        if self.rule is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _bound_args(self.fun, args, kwargs)
        return _one_call(f"custom_jvp({name})", self, args, lambda: self._call(name, args))

    def _call(self, name, args):
        diff, trees, tensors = self._split(args)
        if not _differentiates(tensors):
            return self.fun(*args)
        links = _Links(tensors)
        detached = self._detached_args(args, diff, links)
        with _no_grad():
            out = self.fun(*detached)
        out_leaves, out_def = tree_flatten(out)
        out_pos = [i for i, v in enumerate(out_leaves) if isinstance(v, _Tensor) and v.is_floating_point()]

        def tangent_out(primals, tangents):
            """The rule's output tangents at the linked outputs, for these per-leaf tangents."""
            it = iter(tangents)
            tangent_args = [tree_map(lambda v: next(it) if isinstance(v, _Tensor) else v, primals[i]) for i in diff]
            nondiff = [primals[i] for i in self.nondiff_argnums]
            _, t_out = self.rule(*nondiff, tuple(primals[i] for i in diff), tuple(tangent_args))
            t_leaves, t_def = tree_flatten(t_out)
            if t_def != out_def:
                raise ValueError(f"[custom_jvp {name}] the rule's tangent output has structure {t_def}, "
                                 f"the function's output {out_def}")
            return [t_leaves[i] for i in out_pos]

        def jvp(tangents):
            zeros = [t if t is not None else _C.zeros_like(p) for t, p in zip(tangents, links.detached)]
            return tangent_out(detached, zeros)

        def vjp(saved, grads):
            from .autograd import enable_grad, grad
            higher = _ag.is_grad_enabled()  # backward with create_graph: record the transpose too
            primals = list(args)
            it = iter(saved)
            for i in diff:
                primals[i] = tree_map(lambda v: next(it) if isinstance(v, _Tensor) else v, args[i])
            with enable_grad():
                probes = [_C.zeros_like(t).requires_grad_() for t in saved]
                t_out = tangent_out(primals, probes)
                return list(grad(t_out, probes, grad_outputs=grads, allow_unused=True, create_graph=higher))

        return _link(f"custom_jvp({name})", tensors, out, vjp, jvp, tensors)


# ---- TensorFlow: tf.custom_gradient ------------------------------------------------------------

def custom_gradient(f):
    """tf.custom_gradient: f(*x) returns (y, grad_fn), grad_fn(*upstream) the gradients of
    the inputs (one, or a tuple with one per input)."""
    name = getattr(f, "__name__", "custom_gradient")

    @functools.wraps(f)
    def wrapped(*args):
        return _one_call(f"custom_gradient({name})", wrapped, args, lambda: call(args))

    def call(args):
        tensor_pos, tensors = _split_tensors(list(args))
        links = _Links(tensors)
        call_args = list(args)
        for i, d in zip(tensor_pos, links.detached):
            call_args[i] = d
        with _no_grad():
            y, grad_fn = f(*call_args)
        if not _differentiates(tensors):
            return y
        if "variables" in inspect.signature(grad_fn).parameters:
            raise NotImplementedError(f"[custom_gradient {name}] grad_fn(..., variables=...): gradients of "
                                      "variables used inside f are not supported; pass them as inputs")

        def vjp(saved, grads):
            result = grad_fn(*grads)
            result = list(result) if isinstance(result, (tuple, list)) else [result]
            if len(result) != len(args):
                raise TypeError(f"[custom_gradient {name}] grad_fn returned {len(result)} gradients for "
                                f"{len(args)} inputs")
            return [result[i] for i in tensor_pos]

        return _link(f"custom_gradient({name})", tensors, y, vjp, None, [])

    return wrapped
