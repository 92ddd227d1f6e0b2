"""Keras's functional API (keras.Input, keras.Model(inputs=, outputs=)) against Keras 3 (the
TensorFlow backend): the same graphs built in both give the same layer names, output shapes,
parameter counts and (with Keras's weights copied over) predictions, and train alike; the model
is a C++ module (ug.keras.Functional) that summary, ONNX export and ug.jit run as any other."""
import numpy as np
import pytest

import unigrad as ug
from reference import assert_close

RNG = np.random.default_rng(0)


def mlp(k):
    inputs = k.Input(shape=(20,), name="pixels")
    x = k.layers.Dense(24, activation="relu", name="hidden")(inputs)
    return k.Model(inputs=inputs, outputs=k.layers.Dense(5, name="logits")(x), name="mlp")


def two_inputs(k):
    a, b = k.Input(shape=(20,), name="a"), k.Input(shape=(18,), name="b")
    xa = k.layers.Dense(12, activation="relu", name="dense_a")(a)
    xb = k.layers.Dense(10, activation="tanh", name="dense_b")(b)
    x = k.layers.Concatenate(name="concat")([xa, xb])
    return k.Model(inputs=[a, b], outputs=k.layers.Dense(3, name="head")(x), name="two_inputs")


def residual(k):
    inputs = k.Input(shape=(20,), name="x")
    h = k.layers.Dense(20, activation="relu", name="d1")(inputs)
    h = k.layers.Dense(20, name="d2")(h)
    x = k.layers.Activation("relu", name="act")(k.layers.Add(name="add")([inputs, h]))
    return k.Model(inputs, k.layers.Dense(4, name="out")(x), name="residual")


def shared(k):
    a, b = k.Input(shape=(20,), name="left"), k.Input(shape=(20,), name="right")
    dense = k.layers.Dense(8, activation="relu", name="shared")  # one layer, two nodes: one set of weights
    x = k.layers.Multiply(name="mul")([dense(a), dense(b)])
    return k.Model([a, b], k.layers.Dense(2, name="out")(x), name="siamese")


def two_outputs(k):
    inputs = k.Input(shape=(20,), name="features")
    h = k.layers.Dense(24, activation="relu", name="trunk")(inputs)
    return k.Model(inputs, [k.layers.Dense(3, name="cls")(h), k.layers.Dense(1, name="reg")(h)], name="heads")


GRAPHS = [mlp, two_inputs, residual, shared, two_outputs]


def _inputs(model):
    return [RNG.standard_normal((6, *t.shape[1:])).astype(np.float32) for t in model.inputs]


def _listed(out):
    """A model's output (one or a list; Keras's or unigrad's tensors) as a list of arrays."""
    out = out if isinstance(out, (list, tuple)) else [out]
    return [o.detach().numpy() if isinstance(o, ug.Tensor) else np.asarray(o) for o in out]


def _magnitudes(ours, xs):
    """Each output's terms: the model on |x| with |weights| (bounds every sum's |terms|, relu,
    tanh, Add, Concatenate and Multiply being monotone on them)."""
    weights = ours.get_weights()
    ours.set_weights([np.abs(w) for w in weights])
    try:
        return _listed(ours([ug.tensor(np.abs(x)) for x in xs]))
    finally:
        ours.set_weights(weights)


def _twins(keras, build):
    theirs, ours = build(keras), build(ug.keras)
    ours.set_weights(theirs.get_weights())
    return ours, theirs


@pytest.mark.parametrize("build", GRAPHS, ids=[g.__name__ for g in GRAPHS])
def test_graph_matches_keras(keras, build):
    ours, theirs = _twins(keras, build)
    assert isinstance(ours, ug.nn.Module) and ours.name == theirs.name
    assert ours.layer_names == [layer.name for layer in theirs.layers if type(layer).__name__ != "InputLayer"]
    # model.layers as Keras lists it: the InputLayers first, so that layers[1] is the first layer
    assert [(type(layer).__name__, layer.name) for layer in ours.layers] == \
        [(type(layer).__name__, layer.name) for layer in theirs.layers]
    assert ours.input_names == [t.name for t in theirs.inputs]
    assert [t.shape for t in ours.outputs] == [tuple(t.shape) for t in theirs.outputs]
    assert ours.count_params() == theirs.count_params()
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(a, b)
    xs = _inputs(theirs)
    want = _listed(theirs(xs if len(xs) > 1 else xs[0]))
    got = _listed(ours([ug.tensor(x) for x in xs]))
    fan_in = max(w.shape[0] for w in theirs.get_weights() if w.ndim == 2)
    for g, w, terms in zip(got, want, _magnitudes(ours, xs)):
        assert_close(g, w, n=fan_in, terms=terms)


@pytest.mark.parametrize("build", [mlp, residual], ids=["mlp", "residual"])
def test_fit_matches_keras(keras, build):
    x = RNG.standard_normal((32, 20)).astype(np.float32)
    y = RNG.integers(0, 4, 32)
    ours, theirs = _twins(keras, build)
    ours.compile(optimizer=ug.keras.optimizers.SGD(0.05), loss="sparse_categorical_crossentropy")
    theirs.compile(optimizer=keras.optimizers.SGD(0.05),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    got = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    want = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-5)


def test_shared_layer_is_one_set_of_weights():
    model = shared(ug.keras)
    assert len(model.layers) == 5 and model.layers[2] is model.get_layer("shared")
    assert model.get_layer("left") is model.layers[0] and model.layers[0].batch_shape == (None, 20)
    a, b = ug.randn(2, 20), ug.randn(2, 20)
    model([a, b]).sum().backward()
    dense = model.get_layer("shared")
    h = lambda x: ug.relu(x @ dense.weight.t() + dense.bias)  # noqa: E731
    assert_close(model([a, b]).detach().numpy(), model.get_layer("out")(h(a) * h(b)).detach().numpy())
    assert dense.weight.grad is not None


def test_lazy_layers_are_built_when_called_symbolically():
    dense = ug.keras.layers.Dense(7)
    assert dense.weight is None
    out = dense(ug.keras.Input(shape=(5,)))
    assert tuple(dense.weight.shape) == (7, 5) and out.shape == (None, 7) and out.dtype == "float32"
    assert dense.training  # the example pass ran in eval mode and restored the mode


def test_input_keeps_keras_attributes():
    t = ug.keras.layers.Input(shape=(3, 4), batch_size=8, dtype="float64", name="seq")
    assert (t.shape, t.dtype, t.name) == ((8, 3, 4), "float64", "seq")
    assert ug.keras.Input(shape=(2,)).shape == (None, 2)


def test_summary_lists_nodes(capsys):
    model = residual(ug.keras)
    model.summary()
    text = capsys.readouterr().out
    assert 'Model: "residual"' in text
    rows = [line.split() for line in text.splitlines() if "(None" in line]
    assert [r[0] for r in rows] == ["x", "d1", "d2", "add", "act", "out"]
    assert rows[3][1:3] == ["(Add)", "(None,"] and rows[-1][-1] == "84"
    assert "Total params: 924" in text


def test_weights_round_trip_through_a_file(tmp_path):
    model, other = two_inputs(ug.keras), two_inputs(ug.keras)
    model.save_weights(tmp_path / "w.safetensors")
    other.load_weights(tmp_path / "w.safetensors")
    xs = [ug.randn(3, 20), ug.randn(3, 18)]
    np.testing.assert_array_equal(model(xs).detach().numpy(), other(xs).detach().numpy())


def test_onnx_export_and_jit(tmp_path):
    model = residual(ug.keras)
    model.eval()
    x = ug.randn(5, 20)
    want = model(x).detach().numpy()
    ug.onnx.export(model, x, str(tmp_path / "m.onnx"))
    assert_close(ug.onnx.load(str(tmp_path / "m.onnx"))(x).detach().numpy(), want)
    model.save(tmp_path / "k.onnx")  # Keras's save: the input shape is the graph's
    assert_close(ug.keras.models.load_model(tmp_path / "k.onnx")(x).detach().numpy(), want)
    jitted = ug.jit(lambda v: model(v) * 2)
    assert_close(jitted(x).numpy(), 2 * want)


def test_model_subclassing_unchanged():
    class Net(ug.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = ug.keras.layers.Dense(3)

        def forward(self, x):
            return self.dense(x)

    net = Net()
    assert isinstance(net, ug.nn.Module) and net(ug.ones(2, 4)).shape == (2, 3)


def test_shape_mismatch_names_the_layer():
    inputs = ug.keras.Input(shape=(5,))
    with pytest.raises(ValueError, match=r"\[wrong_size\].*\(None, 5\)"):
        ug.keras.layers.Dense(4, input_dim=7, name="wrong_size")(inputs)
    a, b = ug.keras.Input(shape=(5,)), ug.keras.Input(shape=(6,))
    with pytest.raises(ValueError, match=r"\[sum\]"):
        ug.keras.layers.Add(name="sum")([a, b])


def test_unreachable_output_raises():
    a, b = ug.keras.Input(shape=(4,), name="a"), ug.keras.Input(shape=(4,), name="b")
    out = ug.keras.layers.Add()([a, b])
    with pytest.raises(ValueError, match="not reachable from the inputs.*'b'"):
        ug.keras.Model(inputs=a, outputs=out)
    with pytest.raises(TypeError, match="symbolic tensors"):
        ug.keras.Model(inputs=a, outputs=ug.ones(2, 4))


def test_deepcopy_copies_the_layers_once():
    import copy

    model = shared(ug.keras)
    other = copy.deepcopy(model)
    xs = [ug.randn(2, 20), ug.randn(2, 20)]
    np.testing.assert_array_equal(model(xs).detach().numpy(), other(xs).detach().numpy())
    assert other.layers[0] is not model.layers[0] and other.outputs[0]._layer is other.get_layer("out")


def operators(k):
    a, b = k.Input(shape=(4,), name="a"), k.Input(shape=(4,), name="b")
    h = k.layers.Dense(4, name="proj")(a)
    out = (h + b) * 2.0 - a / (abs(b) + 1.0) + (-a) ** 2 + 1.0 - 0.5 * h[:, :1]
    return k.Model([a, b], [out, a[:, 0], h @ np.ones((4, 2), np.float32), (a > b) * 1.0], name="ops")


def test_operators_on_symbolic_tensors_match_keras(keras, capsys):
    ours, theirs = _twins(keras, operators)
    assert [layer.name for layer in ours.layers] == [layer.name for layer in theirs.layers]  # operations left out
    xs = _inputs(theirs)
    want = _listed(theirs(xs))
    got = _listed(ours([ug.tensor(x) for x in xs]))
    assert [g.shape for g in got] == [w.shape for w in want] == [(6, 4), (6,), (6, 2), (6, 4)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    # Each operator is a node of Keras's operation, named as Keras names it.
    a = ug.keras.Input(shape=(3,), name="x")
    ug.keras.Model(a, [a + 1, 1 - a, a[:, 0], -a]).summary()
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines() if "(None" in line]
    assert [r[1] for r in rows] == ["(InputLayer)", "(Add)", "(Subtract)", "(GetItem)", "(Negative)"]
    assert [r[0].rstrip("_0123456789") for r in rows[1:]] == ["add", "subtract", "get_item", "negative"]
    with pytest.raises(TypeError, match="cannot iterate"):
        list(a)


def test_sequential_summary_shows_keras_names(capsys):
    """Keras's summary names a row by the layer's name ("hidden (Dense)"); a layer without a
    Keras name (a torch-style ReLU) keeps its place in the Sequential."""
    model = ug.nn.Sequential(ug.keras.layers.Dense(4, input_dim=3, name="hidden"), ug.nn.ReLU(),
                             ug.keras.layers.Dense(2), ug.keras.layers.Activation("softmax", name="probs"))
    model.summary()
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines() if "(None" in line]
    dense = model[2].name
    assert dense.startswith("dense") and rows == [["hidden", "(Dense)"], ["1", "(ReLU)"], [dense, "(Dense)"],
                                                  ["probs", "(Activation)"]]


def test_a_sequential_starting_with_keras_input_predicts_and_fits_as_keras(keras):
    """Keras 3's habit, keras.Sequential([keras.Input(shape), ...]) and Sequential().add(Input):
    before, a std::bad_cast and a binding TypeError."""
    x = RNG.standard_normal((16, 10)).astype(np.float32)
    y = RNG.standard_normal((16, 3)).astype(np.float32)
    theirs = keras.Sequential([keras.Input((10,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)])
    ours = ug.keras.Sequential([ug.keras.Input((10,)), ug.keras.layers.Dense(6, activation="relu"),
                                ug.keras.layers.Dense(3)], name="stack")
    added = ug.keras.models.Sequential()
    added.add(ug.keras.Input((10,)))
    added.add(ug.keras.layers.Dense(6, activation="relu"))
    added.add(ug.keras.layers.Dense(3))
    for model in (ours, added):
        model.set_weights(theirs.get_weights())
        np.testing.assert_allclose(model.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
        assert model.count_params() == theirs.count_params()
    assert ours.name == "stack"
    ours.compile(optimizer=ug.keras.optimizers.SGD(0.05), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    got = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    want = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
