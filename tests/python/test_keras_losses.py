"""ug.keras.losses against Keras 3's (the TensorFlow backend): the loss classes called in Keras's
order, loss(y_true, y_pred, sample_weight), under each reduction, the per-sample functions, and
compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)) training as the
loss by name does. Values are float32 in both (Keras casts to floatx): each per-sample loss is
a log-sum-exp or mean of at most 5 terms of size ~3, so the two differ by a few float32 roundings
of ~3 (atol 1e-5), and a batch reduction of 8 such values keeps that bound relative (rtol 1e-5)."""
import numpy as np
import pytest

import unigrad as ug

RNG = np.random.default_rng(0)
TOL = {"rtol": 1e-5, "atol": 1e-5}
N, C = 8, 5
LOGITS = RNG.standard_normal((N, C)).astype(np.float32) * 2
LABELS = RNG.integers(0, C, N)
ONE_HOT = np.eye(C, dtype=np.float32)[LABELS]
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
BINARY = RNG.integers(0, 2, (N, C)).astype(np.float32)
REGRESSION = RNG.standard_normal((N, C)).astype(np.float32) * 2
WEIGHTS = RNG.uniform(0, 2, N).astype(np.float32)

# (class name, keyword arguments, y_true, y_pred)
CASES = [
    ("SparseCategoricalCrossentropy", {"from_logits": True}, LABELS, LOGITS),
    ("SparseCategoricalCrossentropy", {}, LABELS, PROBS),
    ("CategoricalCrossentropy", {"from_logits": True}, ONE_HOT, LOGITS),
    ("CategoricalCrossentropy", {}, ONE_HOT, PROBS),
    ("BinaryCrossentropy", {"from_logits": True}, BINARY, LOGITS),
    ("BinaryCrossentropy", {}, BINARY, 1 / (1 + np.exp(-LOGITS))),
    ("MeanSquaredError", {}, REGRESSION, LOGITS),
    ("MeanAbsoluteError", {}, REGRESSION, LOGITS),
    ("Huber", {}, REGRESSION, LOGITS),
    ("Huber", {"delta": 0.5}, REGRESSION, LOGITS),
    ("KLDivergence", {}, ONE_HOT * 0.9 + 0.02, PROBS),
]
REDUCTIONS = ["sum_over_batch_size", "sum", "none", "mean", "mean_with_sample_weight"]


def ids(case):
    return case[0] + "".join(f"-{k}={v}" for k, v in case[1].items())


@pytest.mark.parametrize("case", CASES, ids=[ids(c) for c in CASES])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weighted"])
def test_loss_class_matches_keras(keras, case, reduction, weighted):
    name, kwargs, y_true, y_pred = case
    weights = {"sample_weight": WEIGHTS} if weighted else {}
    expected = getattr(keras.losses, name)(reduction=reduction, **kwargs)(y_true, y_pred, **weights)
    loss = getattr(ug.keras.losses, name)(reduction=reduction, **kwargs)
    got = loss(ug.tensor(y_true), ug.tensor(y_pred), **{k: ug.tensor(v) for k, v in weights.items()})
    np.testing.assert_allclose(got.numpy(), np.asarray(expected), **TOL)
    assert loss.name == getattr(keras.losses, name)().name


FUNCTIONS = [("sparse_categorical_crossentropy", LABELS, LOGITS, {"from_logits": True}),
             ("categorical_crossentropy", ONE_HOT, PROBS, {}),
             ("binary_crossentropy", BINARY, LOGITS, {"from_logits": True}),
             ("mean_squared_error", REGRESSION, LOGITS, {}),
             ("mean_absolute_error", REGRESSION, LOGITS, {}),
             ("huber", REGRESSION, LOGITS, {"delta": 2.0}),
             ("kl_divergence", ONE_HOT * 0.9 + 0.02, PROBS, {})]


@pytest.mark.parametrize("name,y_true,y_pred,kwargs", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_loss_function_matches_keras(keras, name, y_true, y_pred, kwargs):
    expected = getattr(keras.losses, name)(y_true, y_pred, **kwargs)
    got = getattr(ug.keras.losses, name)(ug.tensor(y_true), ug.tensor(y_pred), **kwargs)
    np.testing.assert_allclose(got.numpy(), np.asarray(expected), **TOL)


def test_gradient_flows_through_a_loss_object():
    logits = ug.tensor(LOGITS, requires_grad=True)
    ug.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(ug.tensor(LABELS), logits).backward()
    expected = (PROBS - ONE_HOT) / N  # the mean cross-entropy's gradient
    np.testing.assert_allclose(logits.grad.numpy(), expected, atol=1e-6)


def test_compile_takes_a_loss_object_as_the_loss_by_name():
    """The article's compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    trains as loss="sparse_categorical_crossentropy" with from_logits=True: the object sums the
    16 per-sample losses and divides, the named loss takes their mean in one kernel, so each
    epoch's mean loss differs by float32 roundings of the 16-term sums (rtol 1e-5)."""
    x, y = ug.randn(64, 12), ug.randint(0, 3, (64,))
    histories = []
    for loss, from_logits in [(ug.keras.losses.SparseCategoricalCrossentropy(from_logits=True), None),
                              ("sparse_categorical_crossentropy", True)]:
        ug.manual_seed(0)
        model = ug.keras.Sequential([ug.keras.layers.Dense(8, activation="relu", input_dim=12),
                                     ug.keras.layers.Dense(3)])
        model.compile(optimizer="sgd", loss=loss, from_logits=from_logits)
        histories.append(model.fit(x, y, epochs=2, batch_size=16, shuffle=False, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-5)
    assert histories[0][1] < histories[0][0]


def test_unknown_reduction_and_keras_only_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown reduction \"batch\""):
        ug.keras.losses.MeanSquaredError(reduction="batch")
    with pytest.raises(TypeError):
        ug.keras.losses.MeanSquaredError(from_logits=True)  # Keras's MeanSquaredError has none either
