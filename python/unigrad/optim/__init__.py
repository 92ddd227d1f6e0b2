"""ug.optim: optimizers, usable imperatively (step) and functionally (init/update, like optax)."""
from .. import _C
from .._export import export
from ..tree import keystr, tree_flatten_with_path, tree_unflatten

__all__ = export(_C.optim, globals())

from . import lr_scheduler, swa_utils  # noqa: E402,F401

# The functional form takes any pytree of tensors (nested dicts, lists, tuples, namedtuples,
# registered nodes), as optax: C++ runs on its leaves, and the state and updates come back with
# the params' structure, each parameter's state a dict (Adam's "step", "exp_avg", ...) in its place.


def _params(params, op):
    """The (path, leaf) pairs and structure of params, a pytree of tensors (TypeError, naming the
    leaf, otherwise)."""
    pairs, treedef = tree_flatten_with_path(params)
    for path, leaf in pairs:
        if not isinstance(leaf, _C.Tensor):
            raise TypeError(f"[{op}] params must be a pytree of tensors, but params{keystr(path)} is "
                            f"{type(leaf).__name__}")
    return pairs, treedef


def _like_params(pairs, treedef, tree, op, what, check):
    """The subtrees of tree at the params' leaves, each passing check(value) -> error text or None."""
    try:
        items = treedef.flatten_up_to(tree)
    except ValueError as e:
        raise ValueError(f"[{op}] {what} must have the structure of params: "
                         f"{str(e).removeprefix('[flatten_up_to] ')}") from None
    for item, (path, _) in zip(items, pairs):
        problem = check(item)
        if problem:
            raise TypeError(f"[{op}] {what}{keystr(path)} {problem}")
    return items


def _check_grad(g):
    if g is not None and not isinstance(g, _C.Tensor):
        return f"must be a tensor or None, got {type(g).__name__}"


def _check_state(s):
    if not isinstance(s, dict):
        return f"must be a parameter's state dict (from init), got {type(s).__name__}"
    for k, v in s.items():
        if not isinstance(v, (_C.Tensor, int, float)):
            return f"holds {k!r}: {type(v).__name__}, where a tensor belongs"


def _init(self, params):
    """optax's init: the starting state for params (a pytree of tensors), of params' structure
    with each parameter's state dict in its place."""
    op = f"{type(self).__name__}.init"
    pairs, treedef = _params(params, op)
    return tree_unflatten(treedef, self._init([p for _, p in pairs]))


def _update(self, grads, state, params):
    """(updates, new_state): updates = new params - params, by the rule of step() with the
    defaults' hyperparameters, both of params' structure; grads has params' structure (None for
    a parameter without a gradient: a zero update), and the inputs are not modified."""
    op = f"{type(self).__name__}.update"
    pairs, treedef = _params(params, op)
    g = _like_params(pairs, treedef, grads, op, "grads", _check_grad)
    s = _like_params(pairs, treedef, state, op, "state", _check_state)
    updates, new_state = self._update(g, s, [p for _, p in pairs])
    return tree_unflatten(treedef, updates), tree_unflatten(treedef, new_state)


def apply_updates(params, updates):
    """params + updates (optax.apply_updates), as new tensors of params' structure; updates has
    params' structure (None: that parameter unchanged)."""
    pairs, treedef = _params(params, "apply_updates")
    u = _like_params(pairs, treedef, updates, "apply_updates", "updates", _check_grad)
    return tree_unflatten(treedef, _C.optim._apply_updates([p for _, p in pairs], u))


Optimizer.init, Optimizer.update = _init, _update  # noqa: F821
__all__.append("apply_updates")
