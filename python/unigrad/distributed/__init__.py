"""ug.distributed: torch.distributed over OpenMPI (ug::distributed in C++).

Processes start under mpirun (or `ug launch -n N script.py`, a thin front over it);
init_process_group(backend="mpi") joins them. Every collective has a timeout: a rank that
never arrives turns into a RuntimeError naming the collective and the missing ranks.
"""
import datetime

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

__all__ += ["init_process_group", "new_group", "group"]  # torch's keyword arguments over the binding's
