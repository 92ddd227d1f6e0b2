"""ug.keras: Keras's module paths over unigrad's pieces (keras.mixed_precision,
keras.optimizers, keras.callbacks, keras.config / keras.backend's floatx), so that `keras.X`
code reads `ug.keras.X`."""
from . import _C
from . import callbacks, mixed_precision, optimizers  # noqa: F401

_FLOATX = ("float16", "bfloat16", "float32", "float64")


class config:
    """keras.config.floatx / set_floatx: Keras's default float type is unigrad's default dtype
    (ug.set_default_dtype), which Dense and the other layers make their weights in."""

    @staticmethod
    def floatx():
        return repr(_C.get_default_dtype()).rsplit(".", 1)[-1]

    @staticmethod
    def set_floatx(value):
        if value not in _FLOATX:
            raise ValueError(f"[set_floatx] unknown `floatx` value: {value!r}; expected one of {_FLOATX}")
        _C.set_default_dtype(getattr(_C, value))


backend = config  # Keras 2's keras.backend.floatx / set_floatx
