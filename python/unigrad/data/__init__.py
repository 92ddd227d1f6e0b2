"""ug.data: data sets and their readers (ug::data in C++)."""
from .. import _C
from .._export import export

__all__ = export(_C.data, globals())

from . import transforms  # noqa: E402,F401
