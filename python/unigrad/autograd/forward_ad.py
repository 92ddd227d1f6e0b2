"""ug.autograd.forward_ad: torch.autograd.forward_ad over unigrad's forward mode.

Inside `with dual_level():`, make_dual(x, t) gives a tensor with x's values that carries the
tangent t; every op on it computes its result's tangent with the op's forward rule (the same
rules ug.jvp uses), and unpack_dual(y) returns y's values and tangent. Levels nest (each
`dual_level` is its own level; torch allows one at a time), and compose with backward,
ug.grad and vmap as ug.jvp does. C++: ug::forward::Level, set_tangent and tangent.
"""
from collections import namedtuple

from .. import _C

_ag = _C._autograd
_open = []  # (DualLevel, id), innermost last

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level():
    """Opens a new level (innermost) and returns its id; exit_dual_level closes it."""
    level = _ag.DualLevel()
    _open.append((level, level.enter()))
    return _open[-1][1]


def exit_dual_level(*, level=None):
    """Closes the innermost level (which `level`, when given, must be)."""
    if not _open:
        raise RuntimeError("[forward_ad.exit_dual_level] no dual level is open")
    if level is not None and level != _open[-1][1]:
        raise RuntimeError(f"[forward_ad.exit_dual_level] level {level} is not the innermost open level "
                           f"({_open[-1][1]})")
    _open.pop()[0].exit()


class dual_level:
    """`with dual_level():` opens a forward-mode level for the block; tangents set with
    make_dual inside it are gone after it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _level(level, op):
    if level is None:
        if not _open:
            raise RuntimeError(f"[forward_ad.{op}] needs an open dual level: use `with forward_ad.dual_level():`")
        return _open[-1][1]
    if level not in (lvl for _, lvl in _open):
        raise RuntimeError(f"[forward_ad.{op}] level {level} is not open")
    return level


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def make_dual(tensor, tangent, *, level=None):
    """A tensor with tensor's values (a view of it) carrying `tangent` at the level."""
    level = _level(level, "make_dual")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise TypeError(f"[forward_ad.make_dual] expected a floating-point or complex primal, got "
                        f"{_name(tensor.dtype)}")
    if tuple(tangent.shape) != tuple(tensor.shape) or tangent.dtype != tensor.dtype:
        raise ValueError(f"[forward_ad.make_dual] the tangent must have the primal's shape and dtype: primal "
                         f"{list(tensor.shape)} {_name(tensor.dtype)}, tangent {list(tangent.shape)} "
                         f"{_name(tangent.dtype)}")
    dual = tensor.view_as(tensor)
    _ag.set_tangent(dual, level, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): tensor's values as a view without the tangent, and its tangent at the
    level (None where it has none, or where no level is open)."""
    if level is None and not _open:
        return UnpackedDualTensor(tensor, None)
    level = _level(level, "unpack_dual")
    tangent = _ag.tangent(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = tensor.view_as(tensor)
    _ag.set_tangent(primal, level, None)
    return UnpackedDualTensor(primal, tangent)
