"""ug.ao.nn (torch.ao.nn): the quantized layers."""
from . import quantized  # noqa: F401
