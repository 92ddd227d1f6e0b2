"""TensorFlow/Keras API gaps, each checked against the reference: GradientTape's jacobian,
batch_jacobian, unconnected_gradients and watch_accessed_variables=False (values from
torch.func, semantics from TensorFlow's documentation); fit's validation_freq and the
"learning_rate" log, compile's top-k metrics and KL divergence loss, Keras's persistence
(get_weights/set_weights in Keras's layouts, save/load_model, save_weights/load_weights) and
ug.keras.layers/models (Keras 3 on the torch backend); the profiler's total_average (torch)."""
import os
import sys

import numpy as np
import pytest

import unigrad as ug

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def keras():
    """Keras 3 on the torch backend (TensorFlow is not installed)."""
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "torch"
    import keras

    if keras.backend.backend() != "torch":
        pytest.skip("keras was imported with another backend")
    return keras


# ---- persistence, ug.keras.layers / models ---------------------------------------------


def _keras_style(layers):
    ug.manual_seed(1)
    return ug.keras.models.Sequential([layers.Dense(5, activation="relu", input_dim=4), layers.Dropout(0.5),
                                       layers.Dense(3, activation="softmax")])


def test_get_set_weights_in_keras_layouts(keras):
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    ref = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, activation="relu"), keras.layers.Dropout(0.5),
                            keras.layers.Dense(3, activation="softmax")])
    model = _keras_style(ug.keras.layers)
    ours = model.get_weights()  # Keras builds every layer from the input shape: so does get_weights
    assert [w.shape for w in ours] == [w.shape for w in ref.get_weights()] == [(4, 5), (5,), (5, 3), (3,)]
    np.testing.assert_array_equal(ours[0], model[0].weight.numpy().T)
    model.set_weights(ref.get_weights())
    model.eval()
    np.testing.assert_allclose(model(ug.tensor(x)).numpy(), ref.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    ref.set_weights(model.get_weights())
    for a, b in zip(ref.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"set_weights.*4 weights, got a list of 3"):
        model.set_weights(ours[:3])
    with pytest.raises(ValueError, match=r"set_weights.*weight 0.*\(4, 5\).*\(5, 4\)"):
        model.set_weights([ours[0].T] + ours[1:])


def test_get_weights_batch_norm_order():
    model = ug.nn.Sequential([ug.nn.Dense(3, input_dim=2), ug.nn.BatchNorm1d(3)])
    names = [w.shape for w in model.get_weights()]  # kernel, bias, gamma, beta, moving mean, moving variance
    assert names == [(2, 3), (3,), (3,), (3,), (3,), (3,)]


def test_save_and_load_model(tmp_path):
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    model = _keras_style(ug.keras.layers)
    path = tmp_path / "m.keras"
    model.save(path)
    assert model.training  # save exports in eval mode and restores the mode
    loaded = ug.keras.models.load_model(path)
    model.eval()
    np.testing.assert_allclose(loaded(ug.tensor(x)).numpy(), model(ug.tensor(x)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(loaded.predict(x[:2], verbose=0).numpy(), model(ug.tensor(x[:2])).numpy(), rtol=1e-6)
    loaded.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    before = loaded.evaluate(x, np.zeros(6, np.int64), verbose=0)
    loaded.fit(x, np.zeros(6, np.int64), epochs=5, verbose=0)
    assert loaded.evaluate(x, np.zeros(6, np.int64), verbose=0) < before
    with pytest.raises(ValueError, match=r"\[save\] the model is not built"):
        ug.nn.Sequential([ug.nn.Dense(3)]).save(tmp_path / "lazy.keras")
    conv = ug.nn.Sequential([ug.nn.Conv2d(1, 2, 3), ug.nn.Flatten()])
    conv.save(tmp_path / "conv.onnx", input_shape=(None, 1, 5, 5))
    image = ug.randn(2, 1, 5, 5)
    np.testing.assert_allclose(ug.keras.models.load_model(tmp_path / "conv.onnx")(image).numpy(),
                               conv(image).numpy(), rtol=1e-5, atol=1e-6)


def test_save_and_load_weights(tmp_path):
    model, other = _keras_style(ug.keras.layers), _keras_style(ug.keras.layers)
    model.get_weights()  # builds it
    other.set_weights([w + 1 for w in model.get_weights()])
    model.save_weights(tmp_path / "w.safetensors")
    other.load_weights(tmp_path / "w.safetensors")
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert set(ug.safetensors.load_file(str(tmp_path / "w.safetensors"))) == set(model.state_dict())


def test_keras_module_paths():
    assert ug.keras.layers.Dense is ug.nn.Dense and ug.keras.layers.Flatten is ug.nn.Flatten
    assert ug.keras.models.Sequential is ug.nn.Sequential and ug.keras.Model is ug.nn.Module
    assert ug.keras.layers.Embedding(10, 4).weight.shape == (10, 4)  # Keras's (input_dim, output_dim)
