"""ug.keras.layers take Keras's name= and name themselves as Keras does when it is not given
("conv2d", "conv2d_1", ...); the convolution layers also take a callable activation."""
import re

import numpy as np
import pytest

import unigrad as ug

L = ug.keras.layers
NAMED = [("Dense", (3,)), ("Conv1D", (2, 3)), ("Conv2D", (2, 3)), ("MaxPooling1D", ()), ("MaxPooling2D", ()),
         ("AveragePooling1D", (2,)), ("AveragePooling2D", (2,)), ("GlobalAveragePooling1D", ()),
         ("GlobalAveragePooling2D", ()), ("GlobalMaxPooling1D", ()), ("GlobalMaxPooling2D", ()),
         ("BatchNormalization", ())]


def _base(name):
    return re.sub(r"_\d+$", "", name)


@pytest.mark.parametrize("layer, args", NAMED, ids=[n for n, _ in NAMED])
def test_name_is_kept_and_defaults_as_keras(keras, layer, args):
    ours, theirs = getattr(L, layer)(*args, name="block1"), getattr(keras.layers, layer)(*args, name="block1")
    assert ours.name == theirs.name == "block1"
    ours, theirs = getattr(L, layer)(*args), getattr(keras.layers, layer)(*args)
    assert _base(ours.name) == _base(theirs.name)  # "max_pooling2d", "batch_normalization", ...
    assert getattr(L, layer)(*args).name != ours.name  # unique, as Keras's


def test_name_can_be_set():
    layer = L.Conv2D(4, 3)
    layer.name = "stem"
    assert layer.name == "stem"


def test_conv_takes_a_callable_activation(keras):
    x = np.random.default_rng(0).standard_normal((2, 6, 6, 3)).astype(np.float32)
    theirs = keras.layers.Conv2D(4, 3, activation="relu")
    want = np.asarray(theirs(x))
    ours = L.Conv2D(4, 3, activation=lambda y: y.relu())
    ours(ug.tensor(x))
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(ug.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match=r"\[Conv2D\] activation must be a name such as 'relu' or a callable"):
        L.Conv2D(4, 3, activation=3)


def test_layers_are_the_cpp_modules():
    """The Keras layers are ug::nn's C++ modules, not Python reimplementations."""
    for name in ("Conv2D", "MaxPooling2D", "GlobalAveragePooling1D", "BatchNormalization"):
        assert getattr(L, name).__module__.startswith("unigrad._C")


def test_build_makes_the_weights_before_a_call(keras):
    ours, theirs = L.BatchNormalization(axis=1), keras.layers.BatchNormalization(axis=1)
    ours.build((2, 5, 3))
    theirs.build((2, 5, 3))
    assert ours.built and [w.shape for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]
    conv = L.Conv1D(4, 3, data_format="channels_first")
    conv.build((2, 6, 9))
    assert conv.built and conv.kernel.shape == (3, 6, 4)
