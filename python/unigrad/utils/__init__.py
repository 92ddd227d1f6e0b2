"""ug.utils: torch.utils's layout (ug.utils.tensorboard)."""
from . import tensorboard  # noqa: F401
