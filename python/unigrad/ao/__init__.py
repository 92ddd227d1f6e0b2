"""ug.ao (torch.ao): dynamic quantization, ug.ao.quantization and ug.ao.nn.quantized.dynamic."""
from . import nn, quantization  # noqa: F401
