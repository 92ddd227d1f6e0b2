"""ug.data.transforms: image transforms with torchvision.transforms' names (ug::data::transforms
in C++). Each works on one image (C, H, W) or a whole batch (N, C, H, W); the random ones draw
per image from the global generator (ug.manual_seed)."""
from .. import _C
from .._export import export

__all__ = export(_C.data.transforms, globals())
