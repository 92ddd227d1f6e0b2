import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session")
def tf():
    """TensorFlow (the reference for the Keras and tf.data habits), imported at first use: the
    import takes seconds. Quiet, and on the CPU."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow

    tensorflow.config.set_visible_devices([], "GPU")
    return tensorflow


@pytest.fixture(scope="session")
def keras(tf):
    """Keras 3 on the TensorFlow backend."""
    import keras

    assert keras.backend.backend() == "tensorflow"
    return keras


@pytest.fixture(scope="module")
def jax64():
    """JAX on the CPU with 64-bit values (float64 comparisons), for one test module at a time."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    with jax.enable_x64(True):
        yield jax
