"""ug.func: torch.func's names for the function transforms, which are ug's own (ug.grad, ug.vmap,
jacrev, jacfwd, hessian, vjp, jvp, linearize; the JAX spellings), with PyTorch's argument names, and
functional_call / stack_module_state, so that functorch code (per-sample gradients, model
ensembles) runs as written."""
from . import _C
from . import nn as _nn
from . import transforms as _t
from .tree import tree_flatten, tree_unflatten

grad, jacrev, jacfwd, hessian, vjp, jvp, linearize = _t.grad, _t.jacrev, _t.jacfwd, _t.hessian, _t.vjp, _t.jvp, _t.linearize


def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: (gradient, value), the reverse of jax.value_and_grad's order
    (with has_aux: (gradient, (value, aux)))."""
    both = _t.value_and_grad(func, argnums, has_aux)

    def wrapped(*args, **kwargs):
        value, gradient = both(*args, **kwargs)
        return gradient, value
    return wrapped


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.func.vmap: ug.vmap with PyTorch's names (in_dims, out_dims). randomness: what random
    ops inside do ("error" raises, "same" draws once for every example, "different" for each
    example apart). chunk_size maps that many examples at a time and concatenates the results."""
    if randomness not in ("error", "same", "different"):
        raise ValueError(f"[vmap] randomness must be 'error', 'same' or 'different', got {randomness!r}")
    mapped = _t.vmap(func, in_dims, out_dims, randomness=randomness)
    if chunk_size is None:
        return mapped
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"[vmap] chunk_size must be a positive int, got {chunk_size!r}")

    def chunked(*args):
        dims = tuple(in_dims) if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        sizes = {a.shape[d] for a, d in zip(args, dims) if d is not None and isinstance(a, _C.Tensor)}
        if len(sizes) != 1:
            raise ValueError(f"[vmap] with chunk_size, the mapped tensor arguments must share one batch size, "
                             f"got {sorted(sizes)}")
        (size,) = sizes
        outs, rng = [], _C.get_rng_state() if randomness == "same" else None
        for start in range(0, size, chunk_size):
            if rng is not None:  # every chunk draws what the first drew
                _C.set_rng_state(rng)
            length = min(chunk_size, size - start)
            part = [a if d is None else a.narrow(d, start, length) for a, d in zip(args, dims)]
            outs.append(mapped(*part))
        leaves = [tree_flatten(o)[0] for o in outs]
        treedef = tree_flatten(outs[0])[1]
        out_dim_leaves = (out_dims,) * treedef.num_leaves if isinstance(out_dims, int) else tree_flatten(out_dims)[0]
        return tree_unflatten(treedef, [_C.cat([chunk[i] for chunk in leaves], out_dim_leaves[i])
                                        for i in range(treedef.num_leaves)])
    return chunked


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """torch.func.functional_call: ug.nn.functional_call (module called with the given parameters
    and buffers in place of its own, which stay as they were) taking several dicts, keys as
    named_parameters / named_buffers give them. strict: every parameter and buffer must be
    given. (tie_weights is accepted: a tensor shared by two names is replaced under the name
    given.)"""
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (tuple, list)) else [
        parameter_and_buffer_dicts]
    merged = {}
    for d in dicts:
        for name, value in d.items():
            if name in merged:
                raise ValueError(f"[functional_call] {name!r} appeared in more than one of the dictionaries")
            merged[name] = value
    if strict:
        own = [n for n, _ in module.named_parameters()] + [n for n, _ in module.named_buffers()]
        missing = [n for n in own if n not in merged]
        if missing:
            raise RuntimeError(f"[functional_call] strict: missing key(s) {', '.join(missing)}")
    return _nn.functional_call(module, merged, () if args is None else args, kwargs)


def stack_module_state(models):
    """torch.func.stack_module_state: (params, buffers), each name's tensors of every model
    stacked along a new dim 0, for vmap over an ensemble of models of one architecture. The
    stacked parameters are new leaves that require grad."""
    models = list(models)
    if not models:
        raise RuntimeError("[stack_module_state] expected at least one model, got none")
    kinds = {type(m).__name__ for m in models}
    if len(kinds) != 1:
        raise RuntimeError(f"[stack_module_state] expected models of one type, got {sorted(kinds)}")

    def stacked(named):
        per_model = [dict(named(m)) for m in models]
        names = list(per_model[0])
        return {n: _C.stack([p[n].detach() for p in per_model]) for n in names}
    params = {name: t.requires_grad_() for name, t in stacked(lambda m: m.named_parameters()).items()}
    return params, stacked(lambda m: m.named_buffers())


__all__ = ["grad", "grad_and_value", "vmap", "jacrev", "jacfwd", "hessian", "vjp", "jvp", "linearize",
           "functional_call", "stack_module_state"]
