"""ug.nn.utils.parametrize (torch.nn.utils.parametrize): module.weight computed from
module.parametrizations.weight.original by a chain of modules (ug/nn/parametrize.h)."""
from contextlib import contextmanager

from ... import _C

_p = _C.nn._utils
ParametrizationList = _p.ParametrizationList
register_parametrization = _p.register_parametrization
remove_parametrizations = _p.remove_parametrizations
is_parametrized = _p.is_parametrized
transfer_parametrizations_and_params = _p.transfer_parametrizations_and_params

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]


@contextmanager
def cached():
    """Each parametrized tensor is computed once inside the block (torch's parametrize.cached)."""
    with _p._Cached():
        yield


def type_before_parametrizations(module):
    """The module's class: unigrad keeps it (its printout says Parametrized<name>)."""
    return type(module)
