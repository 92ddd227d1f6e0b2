"""ug.distributed: torch.distributed over OpenMPI (ug::distributed in C++).

Processes start under mpirun (or `ug launch -n N script.py`, a thin front over it);
init_process_group(backend="mpi") joins them. Every collective has a timeout: a rank that
never arrives turns into a RuntimeError naming the collective and the missing ranks.
"""
import datetime
import pickle

import numpy as np

from .. import _C
from .._export import export

__all__ = export(_C.distributed, globals())
__all__ = [n for n in __all__ if n not in ("Reducer", "init_process_group", "new_group")]

_init = _C.distributed.init_process_group
_new_group = _C.distributed.new_group


def _seconds(timeout):
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def init_process_group(backend="mpi", init_method=None, timeout=datetime.timedelta(minutes=30), world_size=-1,
                       rank=-1, **kwargs):
    """torch.distributed.init_process_group. MPI knows the ranks: init_method, world_size and
    rank, where given, must agree with it (RANK and WORLD_SIZE in the environment too). "gloo"
    (torch's CPU backend) and None name the CPU's backend, MPI; so does torch's "cpu:gloo"."""
    if backend is None or backend == "cpu:gloo":
        backend = "mpi"
    _init(backend, _seconds(timeout))
    d = _C.distributed
    for name, given, actual in (("world_size", world_size, d.get_world_size()), ("rank", rank, d.get_rank())):
        if given not in (-1, None) and given != actual:
            d.destroy_process_group()
            raise ValueError(f"[init_process_group] {name}={given} but MPI says {actual}")


def new_group(ranks=None, timeout=None, backend=None, **kwargs):
    """torch.distributed.new_group: every rank of the world calls it; ranks are world ranks."""
    return _new_group(list(ranks or []), None if timeout is None else _seconds(timeout))


class _Groups:
    """torch.distributed.group: group.WORLD is the default group (read when used, so it
    names the group init_process_group made)."""

    @property
    def WORLD(self):
        return _C.distributed._default_group()


group = _Groups()

# Python objects travel pickled, as torch's *_object collectives send them: only between ranks
# of one job, which trust each other (unpickling runs code).


def _to_bytes(obj):
    from .. import tensor, uint8
    return tensor(np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy(), dtype=uint8)


def _from_bytes(t, size):
    return pickle.loads(t[:size].numpy().tobytes())


def _sizes(size, group):
    """Every rank's payload size, gathered."""
    from .. import int64, tensor, zeros
    n = _C.distributed.get_world_size(group)
    sizes = [zeros(1, dtype=int64) for _ in range(n)]
    _C.distributed.all_gather(sizes, tensor([size], dtype=int64), group)
    return [int(s.item()) for s in sizes]


def _padded(t, length):
    from .. import cat, uint8, zeros
    return cat([t, zeros(length - t.numel(), dtype=uint8)]) if t.numel() < length else t


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """torch.distributed.broadcast_object_list: src's objects replace object_list's, in place."""
    from .. import cat, int64, tensor, uint8, zeros
    mine = _C.distributed.get_rank() == src
    payloads = [_to_bytes(o) for o in object_list] if mine else []
    sizes = tensor([p.numel() for p in payloads] if mine else [0] * len(object_list), dtype=int64)
    _C.distributed.broadcast(sizes, src, group)
    sizes = [int(v) for v in sizes.tolist()]
    whole = cat(payloads) if mine and payloads else zeros(sum(sizes), dtype=uint8)
    _C.distributed.broadcast(whole, src, group)
    if not mine:
        at = 0
        for i, n in enumerate(sizes):
            object_list[i] = _from_bytes(whole[at:at + n], n)
            at += n


def all_gather_object(object_list, obj, group=None):
    """torch.distributed.all_gather_object: object_list[i] becomes rank i's obj."""
    from .. import uint8, zeros
    payload = _to_bytes(obj)
    sizes = _sizes(payload.numel(), group)
    longest = max(sizes)
    gathered = [zeros(longest, dtype=uint8) for _ in sizes]
    _C.distributed.all_gather(gathered, _padded(payload, longest), group)
    object_list[:len(sizes)] = [_from_bytes(t, n) for t, n in zip(gathered, sizes)]


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """torch.distributed.gather_object: dst's object_gather_list[i] becomes rank i's obj."""
    from .. import uint8, zeros
    payload = _to_bytes(obj)
    sizes = _sizes(payload.numel(), group)
    longest = max(sizes)
    mine = _C.distributed.get_rank() == dst
    if mine and object_gather_list is None:
        raise ValueError("[gather_object] object_gather_list must be given on the destination rank")
    gathered = [zeros(longest, dtype=uint8) for _ in sizes] if mine else None
    _C.distributed.gather(_padded(payload, longest), gathered, dst, group)
    if mine:
        object_gather_list[:len(sizes)] = [_from_bytes(t, n) for t, n in zip(gathered, sizes)]


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0, group=None):
    """torch.distributed.scatter_object_list: scatter_object_output_list[0] becomes src's
    scatter_object_input_list[rank]."""
    from .. import int64, tensor, uint8, zeros
    mine = _C.distributed.get_rank() == src
    n = _C.distributed.get_world_size(group)
    if mine and (scatter_object_input_list is None or len(scatter_object_input_list) != n):
        raise ValueError(f"[scatter_object_list] the source rank must give one object per rank ({n})")
    payloads = [_to_bytes(o) for o in scatter_object_input_list] if mine else []
    sizes = tensor([p.numel() for p in payloads] if mine else [0] * n, dtype=int64)
    _C.distributed.broadcast(sizes, src, group)
    sizes = [int(v) for v in sizes.tolist()]
    longest = max(sizes)
    out = zeros(longest, dtype=uint8)
    _C.distributed.scatter(out, [_padded(p, longest) for p in payloads] if mine else None, src, group)
    scatter_object_output_list[0] = _from_bytes(out, sizes[_C.distributed.get_rank(group)])


__all__ += ["init_process_group", "new_group", "group",  # torch's keyword arguments over the binding's
            "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]
