"""ug.cpu: what torch.cpu answers (the CPU is always there, one device), and torch.cpu.amp."""
from . import amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """The CPU's ops have finished when they return: nothing to wait for."""
