"""TensorFlow/Keras API gaps, each checked against the reference: GradientTape's jacobian,
batch_jacobian, unconnected_gradients and watch_accessed_variables=False (values from
torch.func, semantics from TensorFlow's documentation); fit's validation_freq and the
"learning_rate" log, compile's top-k metrics and KL divergence loss, Keras's persistence
(get_weights/set_weights in Keras's layouts, save/load_model, save_weights/load_weights) and
ug.keras.layers/models (Keras 3 on TensorFlow: conftest's keras fixture); the profiler's
total_average (torch)."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)


# ---- GradientTape ----------------------------------------------------------------------


def test_tape_jacobian_matches_jacrev():
    xv = RNG.standard_normal(3).astype(np.float32)
    wv = RNG.standard_normal((3, 2)).astype(np.float32)
    x, w = ug.tensor(xv, requires_grad=True), ug.tensor(wv, requires_grad=True)
    with ug.GradientTape() as tape:  # a non-persistent tape answers one jacobian
        y = ug.tanh(x[:, None] * w)  # [3, 2]
    jac = tape.jacobian(y, {"x": x, "w": w})

    def f(x, w):
        return torch.tanh(x[:, None] * w)

    jx, jw = torch.func.jacrev(f, argnums=(0, 1))(torch.tensor(xv), torch.tensor(wv))
    assert tuple(jac["x"].shape) == (3, 2, 3) and tuple(jac["w"].shape) == (3, 2, 3, 2)
    np.testing.assert_allclose(jac["x"].numpy(), jx.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jac["w"].numpy(), jw.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.jacobian(y, x)


def test_tape_jacobian_unconnected_and_scalar_target():
    x, u = ug.tensor([1.0, 2.0], requires_grad=True), ug.tensor([3.0], requires_grad=True)
    with ug.GradientTape(persistent=True) as tape:
        y = (x * x).sum()
    jx, ju = tape.jacobian(y, [x, u])
    assert ju is None and jx.shape == (2,)
    np.testing.assert_allclose(jx.numpy(), [2.0, 4.0])
    ju = tape.jacobian(y, [x, u], unconnected_gradients="zero", experimental_use_pfor=False)[1]
    assert ju.shape == (1,) and ju.numpy().tolist() == [0.0]


def test_tape_batch_jacobian_matches_vmapped_jacrev():
    xv = RNG.standard_normal((4, 3)).astype(np.float32)
    wv = RNG.standard_normal((3, 2)).astype(np.float32)
    x, w = ug.tensor(xv), ug.tensor(wv)
    with ug.GradientTape() as tape:
        tape.watch(x)
        y = ug.tanh(x @ w) ** 2  # [4, 2], each row from its own row of x
    jac = tape.batch_jacobian(y, x)

    def f(row):
        return torch.tanh(row @ torch.tensor(wv)) ** 2

    expected = torch.func.vmap(torch.func.jacrev(f))(torch.tensor(xv))
    assert tuple(jac.shape) == (4, 2, 3)
    np.testing.assert_allclose(jac.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    with ug.GradientTape() as tape:
        tape.watch(x)
        y = x.sum(1)
    with pytest.raises(ValueError, match="batch size"):
        tape.batch_jacobian(y, ug.zeros(5, 3))


def test_tape_unconnected_gradients():
    x, u = ug.tensor([1.0, 2.0], requires_grad=True), ug.tensor([3.0, 4.0, 5.0], requires_grad=True)
    with ug.GradientTape(persistent=True) as tape:
        y = (x * x).sum()
    assert tape.gradient(y, [x, u])[1] is None
    assert tape.gradient(y, [x, u], unconnected_gradients="none")[1] is None
    for zero in ("zero", ug.UnconnectedGradients.ZERO):
        gx, gu = tape.gradient(y, [x, u], unconnected_gradients=zero)
        assert gu.numpy().tolist() == [0.0, 0.0, 0.0] and gx.numpy().tolist() == [2.0, 4.0]
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="zeros")


def test_tape_watch_accessed_variables_false():
    w = ug.tensor([2.0, 3.0], requires_grad=True)  # a variable: watched only on request
    x = ug.tensor([5.0, 7.0])
    with ug.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(x)
        h = w * x
        y = (h * x).sum()
    gx, gw, gh = tape.gradient(y, [x, w, h])
    assert gw is None  # TensorFlow: variables not watched get no gradient
    np.testing.assert_allclose(gx.numpy(), [20.0, 42.0])  # d(w x^2)/dx = 2 w x
    np.testing.assert_allclose(gh.numpy(), [5.0, 7.0])  # intermediates computed from x still answer
    assert tape.gradient(y, w, unconnected_gradients="zero").numpy().tolist() == [0.0, 0.0]
    assert [t.numpy().tolist() for t in tape.watched_variables()] == [[5.0, 7.0]]
    with ug.GradientTape() as tape:  # the default watches it
        y = (w * x).sum()
    np.testing.assert_allclose(tape.gradient(y, w).numpy(), [5.0, 7.0])


def test_tape_jacobians_and_watching_match_tensorflow(tf):
    xv = RNG.standard_normal((4, 3)).astype(np.float32)
    wv = RNG.standard_normal((3, 2)).astype(np.float32)
    results = {}
    for lib, make in (("ug", ug.tensor), ("tf", tf.Variable)):
        tape_cls = ug.GradientTape if lib == "ug" else tf.GradientTape
        x, w = make(xv), make(wv)
        if lib == "ug":
            w.requires_grad_()  # a variable: tf.Variable is watched automatically
        with tape_cls(persistent=True) as tape:
            tape.watch(x)
            y = (ug.tanh(x @ w) if lib == "ug" else tf.tanh(x @ w)) ** 2
        results[lib] = [np.asarray(tape.jacobian(y, x)), np.asarray(tape.jacobian(y, w)),
                        np.asarray(tape.batch_jacobian(y, x))]
        with tape_cls(watch_accessed_variables=False, persistent=True) as tape:
            tape.watch(x)
            y = ((x @ w) * x[:, :2]) if lib == "ug" else (x @ w) * x[:, :2]
        gx, gw = tape.gradient(y, [x, w])
        results[lib] += [np.asarray(gx), gw is None,
                         np.asarray(tape.gradient(y, w, unconnected_gradients="zero"))]
    ours, theirs = results["ug"], results["tf"]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- fit, compile ----------------------------------------------------------------------


def _mlp():
    ug.manual_seed(0)
    return ug.nn.Sequential([ug.nn.Dense(3, input_dim=4)])


def test_fit_validation_freq_matches_keras(keras):
    x = RNG.standard_normal((16, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 16)
    model = _mlp()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    ours = model.fit(x, y, epochs=5, validation_split=0.25, validation_freq=2, verbose=0).history
    ref = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    ref.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    theirs = ref.fit(x, y, epochs=5, validation_split=0.25, validation_freq=2, verbose=0).history
    assert sorted(ours) == sorted(theirs) == ["loss", "val_loss"]
    assert len(ours["loss"]) == 5 and len(ours["val_loss"]) == len(theirs["val_loss"]) == 2
    with pytest.raises(ValueError, match="validation_freq"):
        model.fit(x, y, validation_split=0.25, validation_freq=0, verbose=0)


def test_learning_rate_logged_only_by_lr_callbacks(keras):
    x = RNG.standard_normal((8, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 8)
    model = _mlp()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    ref = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    ref.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    assert list(model.fit(x, y, epochs=2, verbose=0).history) == list(ref.fit(x, y, epochs=2, verbose=0).history)

    def schedule(epoch, lr):
        return 0.5 / (epoch + 1)

    ours = model.fit(x, y, epochs=2, verbose=0, callbacks=[ug.callbacks.LearningRateScheduler(schedule)]).history
    theirs = ref.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.LearningRateScheduler(schedule)]).history
    assert sorted(ours) == sorted(theirs) == ["learning_rate", "loss"]
    np.testing.assert_allclose(ours["learning_rate"], theirs["learning_rate"], rtol=1e-6)
    plateau = ug.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0, min_delta=1e9)
    ours = model.fit(x, y, epochs=3, verbose=0, callbacks=[plateau]).history
    plateau = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0, min_delta=1e9)
    theirs = ref.fit(x, y, epochs=3, verbose=0, callbacks=[plateau]).history
    assert ours["learning_rate"] == pytest.approx(theirs["learning_rate"])  # each epoch's rate, before its cut
    assert theirs["learning_rate"][0] > theirs["learning_rate"][-1]


@pytest.mark.parametrize("sparse", [False, True])
def test_top_k_categorical_accuracy_matches_keras(keras, sparse):
    scores = RNG.integers(0, 4, (40, 7)).astype(np.float32)  # small integers: many ties with the 5th score
    labels = RNG.integers(0, 7, 40)
    target = labels if sparse else np.eye(7, dtype=np.float32)[labels]
    name = "sparse_top_k_categorical_accuracy" if sparse else "top_k_categorical_accuracy"
    model = ug.nn.Identity()
    model.compile(optimizer="sgd", loss="mse" if not sparse else "sparse_categorical_crossentropy", metrics=[name])
    ours = model.evaluate(scores, target, batch_size=40, verbose=0, return_dict=True)[name]
    fn = getattr(keras.metrics, name)
    theirs = float(np.mean(keras.ops.convert_to_numpy(fn(target, scores))))
    assert ours == pytest.approx(theirs, abs=1e-7)
    assert 0 < theirs < 1


@pytest.mark.parametrize("name", ["kl_divergence", "kld"])
def test_kl_divergence_loss_matches_keras(keras, name):
    p = RNG.random((12, 5)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    t = RNG.random((12, 5)).astype(np.float32)
    t[0, 0] = 0.0  # clipped to epsilon, as Keras does
    t /= t.sum(1, keepdims=True)
    weight = RNG.random(12).astype(np.float32)
    model = ug.nn.Identity()
    model.compile(optimizer="sgd", loss=name)
    theirs = float(keras.losses.KLDivergence()(t, p))
    assert model.evaluate(p, t, batch_size=12, verbose=0) == pytest.approx(theirs, rel=1e-5)
    theirs = float(keras.losses.KLDivergence()(t, p, sample_weight=weight))
    assert model.evaluate(p, t, batch_size=12, verbose=0, sample_weight=weight) == pytest.approx(theirs, rel=1e-5)


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
    assert issubclass(ug.keras.models.Sequential, ug.nn.Sequential) and issubclass(ug.keras.Model, ug.nn.Module)
    assert ug.keras.layers.Embedding(10, 4).weight.shape == (10, 4)  # Keras's (input_dim, output_dim)


# ---- profiler --------------------------------------------------------------------------


def test_profiler_total_average_sums_rows():
    with ug.profiler.profile() as prof:
        (ug.ones(3) * 2).sum()
    rows = prof.key_averages()
    total = rows.total_average()
    assert total.key == "Total"
    assert total.count == sum(r.count for r in rows)
    assert total.cpu_time_total == pytest.approx(sum(r.cpu_time_total for r in rows))
    assert total.self_cpu_time_total == pytest.approx(sum(r.self_cpu_time_total for r in rows))
