"""fit / evaluate / predict / summary against Keras 3 on the same inputs: validation_split's
split point, NumPy's float64 arrays cast to the model's float dtype, summary() without an
input size, and sample_weight / class_weight (also in validation_data and evaluate)."""
import contextlib
import io

import numpy as np
import pytest

import unigrad as ug

RNG = np.random.default_rng(0)


def identity_pair(keras):
    """Dense(1) with weight 1, bias 0 (prediction == x) in both frameworks, trained at lr 0."""
    ours = ug.nn.Sequential([ug.nn.Dense(1, input_dim=1)])
    ours.load_state_dict({"0.weight": ug.ones(1, 1), "0.bias": ug.zeros(1)})
    ours.compile(optimizer=ug.optimizers.SGD(learning_rate=0.0), loss="mse")
    theirs = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    theirs.set_weights([np.ones((1, 1), np.float32), np.zeros(1, np.float32)])
    theirs.compile(optimizer=keras.optimizers.SGD(learning_rate=0.0), loss="mse")
    return ours, theirs


@pytest.mark.parametrize("n, split", [(40, 0.33), (10, 0.25), (7, 0.5), (100, 0.07), (13, 0.9), (29, 0.1)])
def test_validation_split_takes_keras_split_point(keras, n, split):
    # Keras validates on x[floor(n * (1 - split)):]; the losses say which samples went where.
    x = np.arange(n, dtype=np.float32).reshape(n, 1)
    y = np.zeros((n, 1), np.float32)
    ours, theirs = identity_pair(keras)
    kw = dict(epochs=1, batch_size=128, shuffle=False, verbose=0, validation_split=split)
    h = ours.fit(x, y, **kw).history
    k = theirs.fit(x, y, **kw).history
    np.testing.assert_allclose(h["val_loss"], k["val_loss"], rtol=1e-6)
    np.testing.assert_allclose(h["loss"], k["loss"], rtol=1e-6)


def dense_model(units=1, inputs=4):
    ug.manual_seed(0)
    m = ug.nn.Sequential([ug.nn.Dense(units, input_dim=inputs)])
    m.compile(optimizer="sgd", loss="mse")
    return m


def test_float64_arrays_are_cast_to_the_model_dtype():
    x, y = RNG.random((32, 4)), RNG.random((32, 1))  # float64, NumPy's default
    m = dense_model()
    expected = m.evaluate(x.astype(np.float32), y.astype(np.float32), verbose=0)
    assert m.evaluate(x, y, verbose=0) == pytest.approx(expected)
    out = m.predict(x, verbose=0)
    assert out.dtype == ug.float32
    np.testing.assert_allclose(out.numpy(), m.predict(x.astype(np.float32), verbose=0).numpy())
    h = m.fit(x, y, epochs=1, verbose=0, validation_data=(x, y))
    assert np.isfinite(h.history["val_loss"][0])
    # Batches from an iterable (a list of pairs) are cast the same way.
    m.fit([(x[:16], y[:16]), (x[16:], y[16:])], epochs=1, verbose=0)
    assert m.predict([x], verbose=0).dtype == ug.float32


def test_float64_arrays_through_a_data_loader():
    x, y = RNG.random((32, 4)), RNG.random((32, 1))
    loader = ug.data.DataLoader(ug.data.TensorDataset(ug.tensor(x), ug.tensor(y)), batch_size=8)
    m = dense_model()
    m.fit(loader, epochs=1, verbose=0)
    assert m.evaluate(loader, verbose=0) == pytest.approx(
        m.evaluate(x.astype(np.float32), y.astype(np.float32), verbose=0)
    )


def test_integer_labels_stay_integers():
    x = RNG.random((24, 4))
    y = RNG.integers(0, 3, 24)
    ug.manual_seed(0)
    m = ug.nn.Sequential([ug.nn.Dense(3, input_dim=4)])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    h = m.fit(x, y, epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])


def test_a_float64_model_keeps_float64():
    m = ug.nn.Sequential([ug.nn.Linear(4, 1, dtype=ug.float64)])
    m.compile(optimizer="sgd", loss="mse")
    x = RNG.random((8, 4)).astype(np.float32)
    assert m.predict(x, verbose=0).dtype == ug.float64


def printed(fn):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn()
    return out.getvalue()


def test_summary_without_arguments_uses_the_declared_input_size():
    m = ug.nn.Sequential([ug.nn.Dense(8, activation="relu", input_dim=4), ug.nn.Dense(1)])
    table = printed(m.summary)
    assert table == printed(lambda: m.summary((None, 4)))
    assert "Total params: 49" in table
    nested = ug.nn.Sequential([ug.nn.Sequential([ug.nn.Linear(4, 8)]), ug.nn.Linear(8, 1)])
    assert "Total params: 49" in printed(nested.summary)


def test_summary_without_a_known_input_size_says_to_pass_it():
    m = ug.nn.Sequential([ug.nn.Dense(8), ug.nn.Dense(1)])
    with pytest.raises(ValueError, match=r"\[summary\].*input_size"):
        m.summary()
    with pytest.raises(ValueError, match=r"\[summary\].*input_size"):
        ug.nn.Sequential([ug.nn.ReLU()]).summary()


def weighted_pair(keras, units, activation, loss):
    """The same Dense(units) model (4 inputs) in both frameworks, SGD(0.1)."""
    ug.manual_seed(3)
    ours = ug.nn.Sequential([ug.nn.Dense(units, activation=activation, input_dim=4)])
    theirs = keras.Sequential([keras.Input((4,)), keras.layers.Dense(units, activation=activation)])
    w, b = ours[0].weight.numpy(), ours[0].bias.numpy()
    theirs.set_weights([w.T.copy(), b.copy()])
    ours.compile(optimizer=ug.optimizers.SGD(learning_rate=0.1), loss=loss)
    theirs.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss=loss)
    return ours, theirs


def assert_same_weights(ours, theirs):
    kw, kb = theirs.get_weights()
    np.testing.assert_allclose(ours[0].weight.numpy(), kw.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[0].bias.numpy(), kb, rtol=1e-5, atol=1e-6)


LOSSES = [
    (1, None, "mse"),
    (3, None, "mae"),
    (2, "sigmoid", "binary_crossentropy"),
    (3, "softmax", "categorical_crossentropy"),
    (3, "softmax", "sparse_categorical_crossentropy"),
]


def targets(units, loss, n):
    if loss == "sparse_categorical_crossentropy":
        return RNG.integers(0, units, n)
    if loss == "categorical_crossentropy":
        return np.eye(units, dtype=np.float32)[RNG.integers(0, units, n)]
    if loss == "binary_crossentropy":
        return RNG.integers(0, 2, (n, units)).astype(np.float32)
    return RNG.standard_normal((n, units)).astype(np.float32)


@pytest.mark.parametrize("units, activation, loss", LOSSES)
def test_sample_weight_matches_keras(keras, units, activation, loss):
    n = 20
    x = RNG.standard_normal((n, 4)).astype(np.float32)
    y = targets(units, loss, n)
    sw = RNG.uniform(0, 2, n).astype(np.float32)
    xv, yv, swv = x[:7], y[:7], sw[::-1][:7].copy()
    ours, theirs = weighted_pair(keras, units, activation, loss)
    kw = dict(epochs=2, batch_size=8, shuffle=False, verbose=0, sample_weight=sw, validation_data=(xv, yv, swv))
    h = ours.fit(x, y, **kw).history
    k = theirs.fit(x, y, **kw).history
    np.testing.assert_allclose(h["loss"], k["loss"], rtol=1e-5)
    np.testing.assert_allclose(h["val_loss"], k["val_loss"], rtol=1e-5)
    assert_same_weights(ours, theirs)
    ours_eval = ours.evaluate(x, y, batch_size=8, sample_weight=sw, verbose=0)
    assert ours_eval == pytest.approx(theirs.evaluate(x, y, batch_size=8, sample_weight=sw, verbose=0), rel=1e-5)
    # Unweighted evaluation differs: the weights were used.
    assert ours.evaluate(x, y, batch_size=8, verbose=0) != pytest.approx(ours_eval, rel=1e-5)


def test_sample_weight_with_validation_split_matches_keras(keras):
    x = RNG.standard_normal((30, 4)).astype(np.float32)
    y = targets(1, "mse", 30)
    sw = RNG.uniform(0, 2, 30).astype(np.float32)
    ours, theirs = weighted_pair(keras, 1, None, "mse")
    kw = dict(epochs=2, batch_size=8, shuffle=False, verbose=0, sample_weight=sw, validation_split=0.3)
    h = ours.fit(x, y, **kw).history
    k = theirs.fit(x, y, **kw).history
    np.testing.assert_allclose(h["loss"], k["loss"], rtol=1e-5)
    np.testing.assert_allclose(h["val_loss"], k["val_loss"], rtol=1e-5)
    assert_same_weights(ours, theirs)


@pytest.mark.parametrize("loss", ["sparse_categorical_crossentropy", "categorical_crossentropy"])
def test_class_weight_matches_keras(keras, loss):
    x = RNG.standard_normal((24, 4)).astype(np.float32)
    y = targets(3, loss, 24)
    if loss == "sparse_categorical_crossentropy":
        y = y.reshape(-1, 1)  # Keras's [N, 1] labels
    ours, theirs = weighted_pair(keras, 3, "softmax", loss)
    kw = dict(epochs=2, batch_size=8, shuffle=False, verbose=0, class_weight={0: 0.5, 2: 3.0})
    h = ours.fit(x, y, **kw).history
    k = theirs.fit(x, y, **kw).history
    np.testing.assert_allclose(h["loss"], k["loss"], rtol=1e-5)
    assert_same_weights(ours, theirs)


def test_weights_from_batches_and_the_jit_step():
    x = RNG.standard_normal((16, 4)).astype(np.float32)
    y = RNG.standard_normal((16, 1)).astype(np.float32)
    sw = RNG.uniform(0, 2, 16).astype(np.float32)
    a, b = dense_model(), dense_model()
    b.compile(optimizer="sgd", loss="mse", jit_compile=True)
    a.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, sample_weight=sw)
    batches = [(x[i : i + 4], y[i : i + 4], sw[i : i + 4]) for i in range(0, 16, 4)]
    b.fit(batches, epochs=2, verbose=0)
    np.testing.assert_allclose(a[0].weight.numpy(), b[0].weight.numpy(), rtol=1e-5, atol=1e-7)


def test_bad_weights_raise_clear_errors():
    x = RNG.standard_normal((8, 4)).astype(np.float32)
    y = RNG.standard_normal((8, 1)).astype(np.float32)
    m = dense_model()
    with pytest.raises(ValueError, match=r"\[fit\] sample_weight must have one weight per sample"):
        m.fit(x, y, verbose=0, sample_weight=np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"\[fit\] give sample_weight or class_weight, not both"):
        m.fit(x, y, verbose=0, sample_weight=np.ones(8, np.float32), class_weight={0: 1.0})
    with pytest.raises(ValueError, match=r"\[fit\] sample_weight needs array x and y"):
        m.fit([(x, y)], verbose=0, sample_weight=np.ones(8, np.float32))
    with pytest.raises(ValueError, match=r"\[evaluate\] sample_weight needs array x and y"):
        m.evaluate([(x, y)], verbose=0, sample_weight=np.ones(8, np.float32))
    # A loss function that returns the batch's mean cannot be weighted per sample.
    m.compile(optimizer="sgd", loss=lambda out, t: ((out - t) ** 2).mean())
    with pytest.raises(ValueError, match=r"\[fit\] sample weights need the loss per sample"):
        m.fit(x, y, verbose=0, sample_weight=np.ones(8, np.float32))


def test_a_loss_function_per_sample_is_weighted():
    x = RNG.standard_normal((8, 4)).astype(np.float32)
    y = RNG.standard_normal((8, 1)).astype(np.float32)
    sw = RNG.uniform(0, 2, 8).astype(np.float32)
    m = dense_model()
    named = m.evaluate(x, y, sample_weight=sw, verbose=0)
    m.compile(optimizer="sgd", loss=lambda out, t: ((out - t) ** 2).mean(dim=-1))
    assert m.evaluate(x, y, sample_weight=sw, verbose=0) == pytest.approx(named, rel=1e-6)
