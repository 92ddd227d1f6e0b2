"""ug.cuda.amp: torch.cuda.amp's names. This build has no CUDA device: as in PyTorch's CPU
build, the region warns and is disabled, and the scaler warns and passes gradients through."""
from .. import amp as _amp

autocast, GradScaler = _amp.on_device("cuda")


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: ug.amp.custom_fwd on the CUDA device."""
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """torch.cuda.amp.custom_bwd: ug.amp.custom_bwd on the CUDA device."""
    return _amp.custom_bwd(bwd, device_type="cuda")
