"""ug.keras.layers' convolution, pooling and batch-normalization layers against Keras 3 (the
TensorFlow backend): the same weights (Keras's layouts, through set_weights) give the same
outputs, channels last or first, and a small convolutional model trains as Keras's does."""
import numpy as np
import pytest

import unigrad as ug

RNG = np.random.default_rng(0)
L = ug.keras.layers


def _compare(ours, theirs, x, rtol=1e-5, atol=1e-5, transpose=False):
    """ours given theirs's weights (built by a call on x), then both outputs on x. transpose:
    theirs is the channels-last twin of ours, which takes x channels first (TensorFlow's CPU
    convolution is channels last only)."""
    if transpose:
        want = np.moveaxis(np.asarray(theirs(np.moveaxis(x, 1, -1))), -1, 1)
    else:
        want = np.asarray(theirs(x))
    ours(ug.tensor(x))
    ours.set_weights(theirs.get_weights())
    got = ours(ug.tensor(x)).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


CONV2D = [
    dict(filters=4, kernel_size=3),
    dict(filters=4, kernel_size=3, strides=2, padding="same"),  # 9 -> 5: padding split (1, 1)
    dict(filters=4, kernel_size=(3, 2), strides=(2, 1), padding="same"),  # 8 -> 4: (0, 1), after the extra one
    dict(filters=4, kernel_size=3, dilation_rate=2, padding="same", activation="relu"),
    dict(filters=4, kernel_size=2, strides=(1, 2), groups=2, use_bias=False),
    dict(filters=5, kernel_size=3, padding="same", data_format="channels_first", activation="sigmoid"),
    dict(filters=4, kernel_size=3, strides=2, data_format="channels_first"),
]


@pytest.mark.parametrize("kwargs", CONV2D, ids=lambda k: ",".join(f"{a}={v}" for a, v in k.items()))
@pytest.mark.parametrize("size", [8, 9])
def test_conv2d_matches_keras(keras, kwargs, size):
    shape = (2, 6, size, size + 1) if kwargs.get("data_format") == "channels_first" else (2, size, size + 1, 6)
    x = RNG.standard_normal(shape).astype(np.float32)
    first = kwargs.get("data_format") == "channels_first"
    ours = L.Conv2D(**kwargs)
    theirs = keras.layers.Conv2D(**{k: v for k, v in kwargs.items() if k != "data_format"})
    _compare(ours, theirs, x, transpose=first)
    assert ours.kernel.shape == tuple(theirs.kernel.shape)  # Keras's [kh, kw, in / groups, out]


CONV1D = [
    dict(filters=3, kernel_size=3),
    dict(filters=3, kernel_size=4, strides=2, padding="same"),
    dict(filters=3, kernel_size=3, dilation_rate=2, padding="causal", activation="tanh"),
    dict(filters=3, kernel_size=2, padding="same", data_format="channels_first"),
]


@pytest.mark.parametrize("kwargs", CONV1D, ids=lambda k: ",".join(f"{a}={v}" for a, v in k.items()))
def test_conv1d_matches_keras(keras, kwargs):
    shape = (2, 4, 11) if kwargs.get("data_format") == "channels_first" else (2, 11, 4)
    x = RNG.standard_normal(shape).astype(np.float32)
    theirs = keras.layers.Conv1D(**{k: v for k, v in kwargs.items() if k != "data_format"})
    _compare(L.Conv1D(**kwargs), theirs, x, transpose=kwargs.get("data_format") == "channels_first")


POOLING = [
    dict(),
    dict(pool_size=3, strides=2, padding="same"),
    dict(pool_size=2, strides=1, padding="same"),  # the padding all after
    dict(pool_size=3, padding="same", data_format="channels_first"),
]


@pytest.mark.parametrize("kwargs", POOLING, ids=lambda k: ",".join(f"{a}={v}" for a, v in k.items()) or "defaults")
@pytest.mark.parametrize("name", ["MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D"])
def test_pooling_matches_keras(keras, name, kwargs):
    rank = int(name[-2])
    spatial = (7, 8)[:rank]
    shape = (2, 3, *spatial) if kwargs.get("data_format") == "channels_first" else (2, *spatial, 3)
    x = RNG.standard_normal(shape).astype(np.float32)
    if name.startswith("Average"):  # Keras's average poolings have no default pool_size
        kwargs = {"pool_size": 2, **kwargs}
    _compare(getattr(L, name)(**kwargs), getattr(keras.layers, name)(**kwargs), x)


@pytest.mark.parametrize("kwargs", [dict(), dict(keepdims=True), dict(data_format="channels_first")])
@pytest.mark.parametrize("name", ["GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling1D",
                                  "GlobalMaxPooling2D"])
def test_global_pooling_matches_keras(keras, name, kwargs):
    x = RNG.standard_normal((2, 5, 4, 3)[:int(name[-2]) + 2]).astype(np.float32)
    _compare(getattr(L, name)(**kwargs), getattr(keras.layers, name)(**kwargs), x)


@pytest.mark.parametrize("axis", [-1, 1])
def test_batch_normalization_matches_keras(keras, axis):
    x = (3 * RNG.standard_normal((4, 5, 5, 3)) + 1).astype(np.float32)
    ours, theirs = L.BatchNormalization(axis=axis, momentum=0.9), keras.layers.BatchNormalization(axis=axis,
                                                                                                momentum=0.9)
    theirs(x)
    ours(ug.tensor(x))
    weights = theirs.get_weights()
    weights[0] = RNG.standard_normal(weights[0].shape).astype(np.float32)  # gamma
    weights[1] = RNG.standard_normal(weights[1].shape).astype(np.float32)  # beta
    theirs.set_weights(weights)
    ours.set_weights(weights)
    got = ours(ug.tensor(x)).numpy()  # a Module trains until eval(): the batch's statistics
    np.testing.assert_allclose(got, np.asarray(theirs(x, training=True)), rtol=1e-4, atol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):  # the moving statistics moved alike
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    ours.eval()
    np.testing.assert_allclose(ours(ug.tensor(x)).numpy(), np.asarray(theirs(x, training=False)), rtol=1e-4,
                               atol=1e-4)


def _models(keras, make):
    """The same model in both (weights copied from Keras's), compiled alike."""
    ug.manual_seed(0)
    ours = ug.keras.Sequential(make(L))
    theirs = keras.Sequential([keras.Input((10, 10, 3))] + make(keras.layers))
    ours(ug.zeros(1, 10, 10, 3))
    ours.set_weights(theirs.get_weights())
    ours.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    theirs.compile(optimizer=keras.optimizers.SGD(0.01),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return ours, theirs


@pytest.mark.parametrize("make", [
    lambda layers: [layers.Conv2D(8, 3, activation="relu"), layers.MaxPooling2D(), layers.Flatten(),
                    layers.Dense(10)],
    lambda layers: [layers.Conv2D(6, 3, strides=2, padding="same"), layers.BatchNormalization(),
                    layers.AveragePooling2D(3, 2, padding="same"), layers.GlobalAveragePooling2D(), layers.Dense(4)],
], ids=["conv-pool-flatten-dense", "conv-batchnorm-gap-dense"])
def test_small_model_fits_as_keras(keras, make):
    x = RNG.standard_normal((16, 10, 10, 3)).astype(np.float32)
    y = RNG.integers(0, 4, 16)
    ours, theirs = _models(keras, make)
    got = ours.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    want = theirs.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-4)


def test_layers_build_on_first_call():
    conv = L.Conv2D(8, 3)
    assert not conv.built and list(conv.parameters()) == []
    assert conv(ug.zeros(2, 5, 5, 3)).shape == (2, 3, 3, 8)
    assert conv.built and conv.kernel.shape == (3, 3, 3, 8) and conv.bias.shape == (8,)
    model = ug.keras.Sequential([L.Conv2D(4, 3), L.BatchNormalization(), L.Flatten(), L.Dense(2)])
    model(ug.zeros(1, 5, 5, 3))
    assert [w.shape for w in model.get_weights()] == [(3, 3, 3, 4), (4,), (4,), (4,), (4,), (4,), (36, 2), (2,)]


@pytest.mark.parametrize("make, x, message", [
    (lambda: L.Conv2D(4, 3, padding="full"), None, r"\[Conv2D\] padding must be one of 'valid', 'same'"),
    (lambda: L.Conv2D(4, (3, 3, 3)), None, r"\[Conv2D\] kernel_size must be a positive int or a tuple of 2"),
    (lambda: L.Conv2D(4, 3, groups=3), None, r"\[Conv2D\] groups must be a positive int dividing filters"),
    (lambda: L.Conv2D(4, 3, data_format="NHWC"), None, r"\[Conv2D\] data_format must be one of"),
    (lambda: L.Conv2D(4, 3, activation="nope"), None, r"unknown activation \"nope\""),
    (lambda: L.Conv2D(4, 3, groups=2), (1, 5, 5, 3), r"\[Conv2D\] the input's 3 channels are not divisible"),
    (lambda: L.Conv2D(4, 3), (5, 5, 3), r"\[Conv2D\] expected a 4-D input"),
    (lambda: L.MaxPooling1D(), (2, 5, 5, 3), r"\[MaxPooling1D\] expected a 3-D input"),
    (lambda: L.AveragePooling2D(2, padding="causal"), None, r"\[AveragePooling2D\] padding must be one of"),
])
def test_bad_arguments_are_named(make, x, message):
    with pytest.raises(ValueError, match=message):
        layer = make()
        layer(ug.zeros(*x))


def test_model_saves_and_loads(tmp_path):
    """model.save exports the Keras layers' forward pass (permutes, padding, pooling) to ONNX."""
    ug.manual_seed(0)
    model = ug.keras.Sequential([L.Conv2D(4, 3, strides=2, padding="same", activation="relu"),
                                 L.BatchNormalization(), L.MaxPooling2D(padding="same"),
                                 L.AveragePooling2D(2, padding="same"), L.GlobalMaxPooling2D(), L.Dense(3)])
    x = ug.tensor(RNG.standard_normal((2, 9, 9, 3)).astype(np.float32))
    model(x)
    model.save(tmp_path / "model.onnx", input_shape=(None, 9, 9, 3))
    model.eval()
    loaded = ug.keras.models.load_model(tmp_path / "model.onnx")
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy, dtype", [("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")])
def test_conv_under_a_mixed_policy_matches_keras(keras, policy, dtype):
    """Keras's rule, as ug.nn.Dense's: a layer built under a mixed policy keeps float32 weights
    and convolves in the 16-bit dtype; one built before keeps computing in float32."""
    x = RNG.uniform(-1, 1, (2, 7, 7, 3)).astype(np.float32)
    before = L.Conv2D(4, 3, padding="same")
    try:
        ug.mixed_precision.set_global_policy(policy)
        keras.mixed_precision.set_global_policy(policy)
        ours, theirs = L.Conv2D(4, 3, padding="same"), keras.layers.Conv2D(4, 3, padding="same")
        expected = theirs(x)
    finally:
        ug.mixed_precision.set_global_policy("float32")
        keras.mixed_precision.set_global_policy("float32")
    ours(ug.tensor(x))
    ours.set_weights(theirs.get_weights())
    y = ours(ug.tensor(x))
    assert ours.kernel.dtype == ug.float32 and repr(y.dtype) == f"unigrad.{dtype}" and expected.dtype.name == dtype
    e = np.asarray(expected, dtype=np.float32)
    # 27 products of 16-bit operands summed in float32, then rounded to the 16-bit dtype.
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)
    np.testing.assert_allclose(y.float().numpy(), e, rtol=4 * ulp, atol=4 * ulp * float(np.abs(e).max()))
    assert before(ug.tensor(x)).dtype == ug.float32


def test_float32_conv_inside_autocast_still_autocasts():
    layer, x = L.Conv2D(4, 3), ug.randn(2, 5, 5, 3)
    with ug.autocast("cpu", dtype=ug.bfloat16):
        assert layer(x).dtype == ug.bfloat16
