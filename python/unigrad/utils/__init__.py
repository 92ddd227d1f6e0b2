"""ug.utils: torch.utils's layout (ug.utils.tensorboard, ug.utils.checkpoint, ug.utils.dlpack,
and ug.utils.data, the same module as ug.data)."""
import sys

from .. import data
from . import checkpoint, dlpack, tensorboard  # noqa: F401

# `import unigrad.utils.data` as `import torch.utils.data`: ug.data itself, under torch's path.
sys.modules[__name__ + ".data"] = data
