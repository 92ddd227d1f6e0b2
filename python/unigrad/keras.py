"""ug.keras: Keras's module paths over unigrad's pieces (keras.mixed_precision,
keras.optimizers, keras.callbacks), so that `keras.X` code reads `ug.keras.X`."""
from . import callbacks, mixed_precision, optimizers  # noqa: F401
