"""jax.checkpoint / jax.remat with jax.checkpoint_policies: a function transform that
recomputes the function's activations in backward instead of keeping them, keeping only what
the policy saves. One mechanism with torch.utils.checkpoint (ug.utils.checkpoint)."""
import functools

from .utils.checkpoint import run

# The op names whose saved tensors dots_saveable keeps: the products (JAX's dot_general).
_DOTS = frozenset({"matmul", "mm", "bmm", "linear", "conv", "conv2d", "conv_transpose"})


class checkpoint_policies:
    """jax.checkpoint_policies: each is a function of the saving op's name."""

    @staticmethod
    def nothing_saveable(op):
        return False

    @staticmethod
    def everything_saveable(op):
        return True

    @staticmethod
    def dots_saveable(op):
        return op in _DOTS

    checkpoint_dots = dots_saveable

    @staticmethod
    def save_only_these_ops(*names):
        """Keeps what the named ops save (unigrad's counterpart of save_only_these_names)."""
        names = frozenset(names)
        return lambda op: op in names


def checkpoint(fun=None, *, policy=None, prevent_cse=True, static_argnums=()):
    """jax.checkpoint(fun, policy=...): fun with its activations recomputed in backward.
    prevent_cse and static_argnums are accepted as in JAX (non-tensor arguments are static)."""
    def wrap(f):
        @functools.wraps(f)
        def remat_fun(*args, **kwargs):
            return run(f, args, kwargs, policy)
        return remat_fun
    return wrap if fun is None else wrap(fun)


remat = checkpoint

__all__ = ["checkpoint", "remat", "checkpoint_policies"]
