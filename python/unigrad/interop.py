"""Tensors over other objects' memory, with torch's names: frombuffer (any Python buffer) and
asarray (tensors, NumPy arrays, DLPack producers, buffers and nested sequences), sharing memory
where the dtype and device allow it, as torch does."""
import numpy as np

from . import _C

_NUMPY_OF = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int8": np.int8,
             "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16,
             "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_, "complex64": np.complex64,
             "complex128": np.complex128}


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """torch.frombuffer: a 1-D tensor over buffer's memory (no copy), count items of dtype from byte
    offset (count=-1: to the end). Writes through the tensor change the buffer."""
    name = str(dtype).split(".")[-1]
    if name == "bfloat16":  # NumPy has no bfloat16: read the bits as uint16 and view them as bfloat16
        return frombuffer(buffer, dtype="uint16", count=count, offset=offset).view(_C.bfloat16).requires_grad_(
            requires_grad)
    if name not in _NUMPY_OF:
        raise TypeError(f"[frombuffer] unsupported dtype {dtype}; supported: {', '.join(_NUMPY_OF)}, bfloat16")
    item = np.dtype(_NUMPY_OF[name]).itemsize
    size = memoryview(buffer).nbytes
    if offset < 0 or offset > size or (offset == size and count != 0):
        raise ValueError(f"[frombuffer] offset {offset} is outside the buffer of {size} bytes")
    if count == -1 and (size - offset) % item:
        raise ValueError(f"[frombuffer] the {size - offset} bytes after offset {offset} are not a multiple of "
                         f"{dtype}'s {item}")
    if count != -1 and (count <= 0 or offset + count * item > size):
        raise ValueError(f"[frombuffer] {count} items of {item} bytes from offset {offset} do not fit in a buffer "
                         f"of {size} bytes")
    array = np.frombuffer(buffer, dtype=_NUMPY_OF[name], count=count, offset=offset)
    if not array.flags.writeable:
        array = array.copy()  # torch warns and shares; a read-only buffer can't back a writable tensor here
    return _C.from_numpy(array).requires_grad_(requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch.asarray: obj as a tensor, sharing its memory when dtype and device allow and copy is
    not True; copy=False raises where a copy would be needed."""
    if isinstance(obj, _C.Tensor):
        shared = obj
    elif isinstance(obj, np.ndarray) and obj.dtype.name in _NUMPY_OF:
        shared = _C.from_numpy(obj) if all(s >= 0 for s in obj.strides) else None
    elif hasattr(obj, "__dlpack__"):
        shared = _C.from_dlpack(obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        shared = frombuffer(obj, dtype=dtype or _C.get_default_dtype())
    else:
        shared = None
    if shared is None:
        if copy is False:
            raise ValueError(f"[asarray] a {type(obj).__name__} can't be shared without a copy (copy=False)")
        out = _C.tensor(obj, dtype=dtype, device=device)
    else:
        target_dtype, target_device = dtype or shared.dtype, device or shared.device
        needs_copy = target_dtype != shared.dtype or _C.device(target_device) != shared.device
        if needs_copy and copy is False:
            raise ValueError(f"[asarray] converting {shared.dtype} on {shared.device} to {target_dtype} on "
                             f"{target_device} needs a copy (copy=False)")
        out = shared.to(target_device).to(target_dtype) if needs_copy else shared
        if copy and not needs_copy:
            out = out.clone()
    return out.requires_grad_(requires_grad) if requires_grad else out


__all__ = ["frombuffer", "asarray"]
