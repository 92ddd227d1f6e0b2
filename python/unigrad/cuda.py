"""ug.cuda: what torch.cuda answers. This build has the CPU backend only."""
from . import _C


def is_available():
    return _C.device_available(_C.device("cuda"))


def device_count():
    return _C.cuda_device_count()
