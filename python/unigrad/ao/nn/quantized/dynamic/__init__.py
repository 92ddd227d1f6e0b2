"""ug.ao.nn.quantized.dynamic (torch.ao.nn.quantized.dynamic): Linear with an int8 weight whose
input is quantized to uint8 at each call (ug::nn::quantized::dynamic in C++)."""
from ..... import _C

Linear = _C.quantization.DynamicQuantizedLinear

__all__ = ["Linear"]
