"""torch.utils.checkpoint: activation checkpointing. The region's ops keep none of their saved
tensors; backward runs the region again (with the random state and autocast state it first ran
with, so dropout draws the same masks) to get them back. The C++ side is ug::checkpoint
(ug/autograd/checkpoint.h); ug.checkpoint / ug.remat are JAX's spelling (ug.remat.py)."""
import warnings

from .. import _C
from ..tree import tree_flatten, tree_unflatten


def run(function, args, kwargs, keep=None):
    """function(*args, **kwargs) checkpointed; keep(op_name) -> bool says which saved tensors
    stay (None: none). Tensor leaves of the arguments are the region's inputs."""
    leaves, treedef = tree_flatten((args, kwargs))
    positions = [i for i, v in enumerate(leaves) if isinstance(v, _C.Tensor)]
    box = {}

    def flat(tensors):
        filled = list(leaves)
        for p, t in zip(positions, tensors):
            filled[p] = t
        a, k = tree_unflatten(treedef, filled)
        out_leaves, box["out"] = tree_flatten(function(*a, **k))
        box["values"] = [None if isinstance(v, _C.Tensor) else v for v in out_leaves]
        return [v for v in out_leaves if isinstance(v, _C.Tensor)]

    tensors = _C._functional.checkpoint(flat, [leaves[p] for p in positions], keep)
    it = iter(tensors)
    return tree_unflatten(box["out"], [next(it) if v is None else v for v in box["values"]])


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """torch.utils.checkpoint.checkpoint: function(*args) with its activations recomputed in
    backward. Only the non-reentrant form exists (torch's recommended one); use_reentrant=True
    runs it too, with a warning, since the gradients are the same. The random state is replayed
    whatever preserve_rng_state says (torch's False skips that, for speed, and its dropout then
    gets other masks in backward: gradients of another function)."""
    if use_reentrant:
        warnings.warn("[checkpoint] use_reentrant=True runs the non-reentrant form; the gradients are the same",
                      stacklevel=2)
    del preserve_rng_state  # replaying costs two reads of the generator's state
    return run(function, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """torch.utils.checkpoint.checkpoint_sequential: the modules of a Sequential (or a list) in
    `segments` runs, split as torch splits them: segments - 1 checkpointed runs of
    len // segments modules each, then the rest run normally."""
    functions = list(functions.children()) if isinstance(functions, _C.nn.Module) else list(functions)
    if segments < 1:
        raise ValueError(f"[checkpoint_sequential] segments must be at least 1, got {segments}")
    size = len(functions) // segments
    ends = [size * k for k in range(1, segments)] if size else []
    chunks = [functions[a:b] for a, b in zip([0, *ends], [*ends, len(functions)])]

    def run_chunk(chunk):
        def forward(x):
            for f in chunk:
                x = f(x)
            return x
        return forward

    for chunk in chunks[:-1]:
        input = checkpoint(run_chunk(chunk), input, use_reentrant=use_reentrant, **kwargs)
    return run_chunk(chunks[-1])(input)


__all__ = ["checkpoint", "checkpoint_sequential"]
