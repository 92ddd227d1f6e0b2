"""ug.utils: torch.utils's layout (ug.utils.tensorboard, ug.utils.checkpoint)."""
from . import checkpoint, tensorboard  # noqa: F401
