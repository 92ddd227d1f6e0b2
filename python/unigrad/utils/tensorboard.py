"""ug.utils.tensorboard: `from unigrad.utils.tensorboard import SummaryWriter`, as from torch."""
from ..logging import SummaryWriter

__all__ = ["SummaryWriter"]
