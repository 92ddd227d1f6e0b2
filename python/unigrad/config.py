"""TensorFlow's tf.config device queries over ug's devices: list_physical_devices,
list_logical_devices and the experimental memory settings."""
from collections import namedtuple

from . import _C
from . import memory as _memory
from .compiled import functions_run_eagerly, run_functions_eagerly  # noqa: F401  (tf.config's)

PhysicalDevice = namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = namedtuple("LogicalDevice", ["name", "device_type"])


def _available(device_type):
    kinds = ["CPU", "GPU"] if device_type is None else [str(device_type).upper()]
    for kind in kinds:
        if kind not in ("CPU", "GPU"):
            raise ValueError(f"[list_physical_devices] unknown device type {device_type!r}: use 'CPU' or 'GPU'")
    return [(kind, i) for kind in kinds for i in range(1 if kind == "CPU" else _C.cuda_device_count())]


def list_physical_devices(device_type=None):
    """[PhysicalDevice('/physical_device:CPU:0', 'CPU'), ...] as TensorFlow lists them ('GPU':
    the CUDA devices, none in a CPU build)."""
    return [PhysicalDevice(f"/physical_device:{k}:{i}", k) for k, i in _available(device_type)]


def list_logical_devices(device_type=None):
    return [LogicalDevice(f"/device:{k}:{i}", k) for k, i in _available(device_type)]


class experimental:
    """tf.config.experimental's memory settings. unigrad's allocator always grows on demand and
    never reserves a device's memory up front, which is what set_memory_growth(gpu, True) asks
    TensorFlow for."""

    list_physical_devices = staticmethod(list_physical_devices)

    @staticmethod
    def set_memory_growth(device, enable):
        if getattr(device, "device_type", None) != "GPU":
            raise ValueError(f"[set_memory_growth] memory growth is set on GPU devices, got {device!r}")
        if not enable:
            raise ValueError("[set_memory_growth] unigrad always grows a device's memory on demand; it "
                             "cannot reserve all of it up front (enable=False)")

    @staticmethod
    def get_memory_growth(device):
        return True

    get_memory_info = staticmethod(_memory.get_memory_info)
    reset_memory_stats = staticmethod(_memory.reset_memory_stats)
