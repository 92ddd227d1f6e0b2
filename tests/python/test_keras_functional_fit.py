"""fit / evaluate / predict of Keras's functional models of several inputs and outputs, against
Keras 3 (the TensorFlow backend): x and y as lists or dicts by name, a loss (and metrics) per
output with loss_weights, Keras's log names ("loss", "<output>_loss", "<output>_<metric>"),
predict's list or dict; the same model trained alike in both reaches the same weights."""
import numpy as np
import pytest

import unigrad as ug

RNG = np.random.default_rng(1)
N = 24


def two_by_two(k, dict_outputs=False):
    a, b = k.Input(shape=(5,), name="a"), k.Input(shape=(4,), name="b")
    xa = k.layers.Dense(6, activation="relu", name="dense_a")(a)
    xb = k.layers.Dense(6, activation="tanh", name="dense_b")(b)
    h = k.layers.Dense(8, activation="relu", name="trunk")(k.layers.Concatenate(name="concat")([xa, xb]))
    reg, cls = k.layers.Dense(1, name="reg")(h), k.layers.Dense(3, name="cls")(h)
    outputs = {"score": reg, "label": cls} if dict_outputs else [reg, cls]
    return k.Model(inputs=[a, b], outputs=outputs, name="two_by_two")


def _twins(keras, **kwargs):
    """The model in Keras and in unigrad, with Keras's weights copied layer by layer (Keras orders
    the layers of dict outputs by key)."""
    theirs, ours = two_by_two(keras, **kwargs), two_by_two(ug.keras, **kwargs)
    for layer in theirs.layers:
        if layer.weights:
            ours.get_layer(layer.name).set_weights(layer.get_weights())
    return ours, theirs


def _data():
    xa = RNG.standard_normal((N, 5)).astype(np.float32)
    xb = RNG.standard_normal((N, 4)).astype(np.float32)
    return xa, xb, RNG.standard_normal((N, 1)).astype(np.float32), RNG.integers(0, 3, N)


def _compile(model, k, by_name):
    sce = k.losses.SparseCategoricalCrossentropy(from_logits=True)
    if by_name:
        model.compile(optimizer=k.optimizers.SGD(0.05), loss={"reg": "mse", "cls": sce},
                      loss_weights={"reg": 1.0, "cls": 0.5}, metrics={"reg": ["mae"], "cls": ["accuracy"]})
    else:
        model.compile(optimizer=k.optimizers.SGD(0.05), loss=["mse", sce], loss_weights=[1.0, 0.5],
                      metrics=[["mae"], ["accuracy"]])


def _close_logs(got, want):
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=2e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("by_name", [False, True], ids=["lists", "dicts"])
def test_fit_evaluate_predict_match_keras(keras, by_name):
    xa, xb, y_reg, y_cls = _data()
    ours, theirs = _twins(keras)
    _compile(ours, ug.keras, by_name)
    _compile(theirs, keras, by_name)
    x = {"a": xa, "b": xb} if by_name else [xa, xb]
    y = {"reg": y_reg, "cls": y_cls} if by_name else [y_reg, y_cls]
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, verbose=0)
    got, want = ours.fit(x, y, **kwargs).history, theirs.fit(x, y, **kwargs).history
    assert set(want) == {"loss", "reg_loss", "cls_loss", "reg_mae", "cls_accuracy"}
    _close_logs(got, want)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    _close_logs(ours.evaluate(x, y, verbose=0, return_dict=True), theirs.evaluate(x, y, verbose=0, return_dict=True))
    np.testing.assert_allclose(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0), rtol=2e-5)
    got, want = ours.predict(x, verbose=0), theirs.predict(x, verbose=0)
    assert isinstance(got, list) and len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)


def test_dict_outputs_match_keras(keras):
    xa, xb, y_reg, y_cls = _data()
    ours, theirs = _twins(keras, dict_outputs=True)
    out = ours([ug.tensor(xa), ug.tensor(xb)])
    assert isinstance(out, dict) and list(out) == ["score", "label"] == list(theirs([xa, xb]))
    assert ours.output_names == ["score", "label"]
    for k in (ug.keras, keras):
        model = ours if k is ug.keras else theirs
        model.compile(optimizer=k.optimizers.SGD(0.05),
                      loss={"score": "mse", "label": k.losses.SparseCategoricalCrossentropy(from_logits=True)})
    y = {"score": y_reg, "label": y_cls}
    kwargs = dict(batch_size=8, epochs=1, shuffle=False, verbose=0)
    _close_logs(ours.fit([xa, xb], y, **kwargs).history, theirs.fit([xa, xb], y, **kwargs).history)
    got, want = ours.predict([xa, xb], verbose=0), theirs.predict([xa, xb], verbose=0)
    assert isinstance(got, dict) and list(got) == list(want)
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("form", ["list", "one"])
def test_sample_weight_per_output_matches_keras(keras, form):
    """Keras's sample_weight for several outputs: a list (in output order) of one array per
    output weighs each output's loss by its own. One array weighs them all (Keras 3.15 refuses
    it, asking for one per output: it is compared with Keras given [w, w]). In fit, evaluate
    and validation_data."""
    xa, xb, y_reg, y_cls = _data()
    w_reg, w_cls = RNG.uniform(0, 2, N).astype(np.float32), RNG.uniform(0, 2, N).astype(np.float32)
    w_cls[:5] = 0  # samples that count for one output only
    weights, val_weights = ([w_reg, w_cls], [w_cls, w_reg]) if form == "list" else (w_reg, w_cls)
    keras_weights, keras_val_weights = ([w_reg, w_cls], [w_cls, w_reg]) if form == "list" else ([w_reg] * 2, [w_cls] * 2)
    ours, theirs = _twins(keras)
    _compile(ours, ug.keras, by_name=False)
    _compile(theirs, keras, by_name=False)
    x, y = [xa, xb], [y_reg, y_cls]
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, verbose=0)
    got = ours.fit(x, y, sample_weight=weights, validation_data=(x, y, val_weights), **kwargs).history
    want = theirs.fit(x, y, sample_weight=keras_weights, validation_data=(x, y, keras_val_weights), **kwargs).history
    _close_logs(got, want)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    got = ours.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)
    _close_logs(got, theirs.evaluate(x, y, sample_weight=keras_weights, verbose=0, return_dict=True))
    unweighted = ours.evaluate(x, y, verbose=0, return_dict=True)
    assert got["cls_loss"] != pytest.approx(unweighted["cls_loss"], rel=1e-3)  # the weights were used


def test_sample_weight_per_output_by_name_is_the_list():
    """A dict of weights by output name (Keras takes one shaped as its outputs) equals the list."""
    xa, xb, y_reg, y_cls = _data()
    w_reg, w_cls = RNG.uniform(0, 2, N).astype(np.float32), RNG.uniform(0, 2, N).astype(np.float32)
    model = two_by_two(ug.keras)
    _compile(model, ug.keras, by_name=False)
    logs = [model.evaluate([xa, xb], [y_reg, y_cls], sample_weight=weights, verbose=0, return_dict=True)
            for weights in ([w_reg, w_cls], {"cls": w_cls, "reg": w_reg})]
    _close_logs(logs[1], logs[0])


def test_sample_weight_per_output_errors():
    xa, xb, y_reg, y_cls = _data()
    model = two_by_two(ug.keras)
    model.compile(optimizer="sgd", loss="mse")
    w = np.ones(N, np.float32)
    with pytest.raises(ValueError, match=r"\[fit\] model 'two_by_two' has 2 outputs \('reg', 'cls'\), got a list of 3"):
        model.fit([xa, xb], [y_reg, y_reg], sample_weight=[w, w, w], verbose=0)
    with pytest.raises(ValueError, match=r"\[evaluate\] model 'two_by_two' has no output named 'score'"):
        model.evaluate([xa, xb], [y_reg, y_reg], sample_weight={"score": w, "reg": w}, verbose=0)
    with pytest.raises(ValueError, match=r"\[fit\] sample_weight must have one weight per sample \(24\), got shape \[5\]"):
        model.fit([xa, xb], [y_reg, y_reg], sample_weight=[w, w[:5]], verbose=0)


def test_fit_from_batches_of_every_field():
    """A DataLoader's batches hold the inputs, then the targets: the same steps as arrays."""
    xa, xb, y_reg, y_cls = _data()
    models = [two_by_two(ug.keras), two_by_two(ug.keras)]
    models[1].set_weights(models[0].get_weights())
    for m in models:
        m.compile(optimizer="sgd", loss=["mse", "sparse_categorical_crossentropy"])
    got = models[0].fit([xa, xb], [y_reg, y_cls], batch_size=8, shuffle=False, verbose=0).history
    data = ug.utils.data.TensorDataset(*(ug.tensor(v) for v in (xa, xb, y_reg, y_cls)))
    want = models[1].fit(ug.utils.data.DataLoader(data, batch_size=8), verbose=0).history
    _close_logs(got, want)


def test_wrong_inputs_name_the_model_and_the_key():
    xa, xb, y_reg, y_cls = _data()
    model = two_by_two(ug.keras)
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"\[fit\] model 'two_by_two' has 2 inputs \('a', 'b'\), got a list of 1"):
        model.fit([xa], [y_reg, y_reg], verbose=0)
    with pytest.raises(ValueError, match=r"\[evaluate\] model 'two_by_two' has no input named 'c'"):
        model.evaluate({"a": xa, "c": xb}, [y_reg, y_reg], verbose=0)
    with pytest.raises(ValueError, match=r"\[fit\] model 'two_by_two' is missing data for its output 'cls'"):
        model.fit([xa, xb], {"reg": y_reg}, verbose=0)
    with pytest.raises(ValueError, match=r"\[predict\] model 'two_by_two' has 2 inputs"):
        model.predict(xa, verbose=0)
    with pytest.raises(ValueError, match=r"\[compile\] loss names 'score', which is not an output"):
        model.compile(optimizer="sgd", loss={"score": "mse"})
    with pytest.raises(ValueError, match=r"\[compile\] the model has 2 outputs: give metrics per output"):
        model.compile(optimizer="sgd", loss="mse", metrics=["mae"])


def test_single_output_loss_weight():
    x, y = RNG.standard_normal((8, 3)).astype(np.float32), RNG.standard_normal((8, 2)).astype(np.float32)
    model = ug.nn.Dense(2, input_dim=3)
    model.compile(optimizer="sgd", loss="mse")
    plain = model.evaluate(x, y, verbose=0)
    model.compile(optimizer="sgd", loss="mse", loss_weights=[3.0])
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), 3 * plain, rtol=1e-6)
