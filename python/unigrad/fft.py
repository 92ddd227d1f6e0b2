"""ug.fft: torch.fft's functions, signatures and norm modes over ug::fft (C++, FFTW).

Every transform is differentiable (torch's convention for complex gradients), batches under
ug.vmap and compiles under ug.jit. Real inputs to the complex transforms become complex,
integer inputs float; float16 and bfloat16 are refused.
"""
from ._C._fft import (fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2, ifftn, ifftshift, ihfft,
                      ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn",
           "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
