"""ug.ao.nn.quantized (torch.ao.nn.quantized): the dynamically quantized layers."""
from . import dynamic  # noqa: F401
