"""The optax-style functional optimizers (init/update, ug.optim.apply_updates) on any pytree of
tensors: Flax-style nested dicts, lists, tuples, namedtuples, registered nodes. The state and
updates have the params' structure, as optax's do; a JAX training step (value_and_grad +
update + apply_updates, under ug.jit or not) trains as optax's on the same data."""
import collections
import dataclasses
import functools

import numpy as np
import pytest

import unigrad as ug

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
optax = pytest.importorskip("optax")

_rng = np.random.RandomState(0)
INIT = {"l1": {"w": (_rng.randn(8, 16) * 0.3).astype(np.float32), "b": np.zeros(16, np.float32)},
        "l2": {"w": (_rng.randn(16, 3) * 0.3).astype(np.float32), "b": np.zeros(3, np.float32)}}
X = _rng.randn(32, 8).astype(np.float32)
Y = _rng.randn(32, 3).astype(np.float32)


def mlp_loss(tanh):
    def loss(p, x, y):
        h = tanh(x @ p["l1"]["w"] + p["l1"]["b"])
        return ((h @ p["l2"]["w"] + p["l2"]["b"] - y) ** 2).mean()
    return loss


OPTIMIZERS = {  # name -> (optax's, unigrad's)
    "adam": (lambda: optax.adam(1e-2), lambda: ug.optim.Adam(None, lr=1e-2)),
    "sgd_momentum": (lambda: optax.sgd(0.1, momentum=0.9), lambda: ug.optim.SGD(None, lr=0.1, momentum=0.9)),
}
STEPS = 20


@functools.cache
def optax_params(name):
    loss = mlp_loss(jnp.tanh)
    opt = OPTIMIZERS[name][0]()
    params = jax.tree_util.tree_map(jnp.asarray, INIT)
    state = opt.init(params)

    @jax.jit
    def step(p, s):
        g = jax.grad(loss)(p, X, Y)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s
    for _ in range(STEPS):
        params, state = step(params, state)
    return params


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_nested_dict_mlp_trains_as_optax(name, jit):
    opt = OPTIMIZERS[name][1]()
    loss = mlp_loss(ug.tanh)

    def step(p, s, x, y):
        value, g = ug.value_and_grad(loss)(p, x, y)
        u, s = opt.update(g, s, p)
        return ug.optim.apply_updates(p, u), s, value
    if jit:
        step = ug.jit(step)
    params = ug.tree_map(lambda a: ug.tensor(a.copy()), INIT)
    state = opt.init(params)
    x, y = ug.tensor(X), ug.tensor(Y)
    for _ in range(STEPS):
        params, state, _ = step(params, state, x, y)
    expected = optax_params(name)
    assert jax.tree_util.tree_structure(expected) == jax.tree_util.tree_structure(ug.tree_map(np.asarray, params))
    # float32 over 20 steps, the two libraries' gradients apart by rounding (~1e-7 relative),
    # which Adam's division by sqrt(v) magnifies where v is small: 1.6e-6 at most here
    for got, want in zip(ug.tree_leaves(params), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_state_and_updates_have_the_params_structure():
    params = {"l1": {"w": ug.ones(2), "b": ug.zeros(3)}, "l2": [ug.ones(1)]}
    opt = ug.optim.Adam(None, lr=0.1)
    state = opt.init(params)
    assert set(state) == {"l1", "l2"} and set(state["l1"]) == {"w", "b"} and isinstance(state["l2"], list)
    assert set(state["l1"]["w"]) == {"step", "exp_avg", "exp_avg_sq"}
    assert state["l1"]["b"]["exp_avg"].shape == (3,)
    grads = ug.tree_map(lambda p: ug.ones_like(p), params)
    updates, state = opt.update(grads, state, params)
    assert ug.tree_structure(updates) == ug.tree_structure(params)
    # Adam's first step moves every element by lr against the gradient's sign
    for u in ug.tree_leaves(updates):
        np.testing.assert_allclose(u.numpy(), -0.1, rtol=1e-5)
    assert state["l2"][0]["step"].item() == 1


Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Layer:
    w: object
    b: object


ug.tree_util.register_dataclass(Layer)


@pytest.mark.parametrize("make", [
    lambda: (ug.tensor([1.0, 2.0]), [ug.tensor([3.0])]),
    lambda: Point(ug.tensor([1.0, 2.0]), {"z": ug.tensor([3.0])}),
    lambda: [Layer(ug.tensor([1.0, 2.0]), ug.tensor([3.0])), None],
])
def test_every_pytree_goes_through_sgd(make):
    params = make()
    before = [p.numpy().copy() for p in ug.tree_leaves(params)]
    opt = ug.optim.SGD(None, lr=0.5, momentum=0.9)
    state = opt.init(params)
    grads = ug.tree_map(lambda p: p * 2, params)
    new = params
    for _ in range(2):
        updates, state = opt.update(grads, state, new)
        assert ug.tree_structure(updates) == ug.tree_structure(params)
        new = ug.optim.apply_updates(new, updates)
    assert ug.tree_structure(new) == ug.tree_structure(params)
    # two steps on a fixed gradient 2p: p - 0.5 * (2p + (0.9 * 2p + 2p)) = -1.9 p
    for b, p, n in zip(before, ug.tree_leaves(params), ug.tree_leaves(new)):
        np.testing.assert_allclose(n.numpy(), -1.9 * b, rtol=1e-6)
        np.testing.assert_array_equal(p.numpy(), b)  # the inputs untouched


def test_a_missing_gradient_is_a_zero_update():
    params = {"a": {"w": ug.tensor([1.0, 2.0])}, "b": ug.tensor([3.0])}
    opt = ug.optim.SGD(None, lr=0.5)
    updates, _ = opt.update({"a": {"w": ug.tensor([1.0, -1.0])}, "b": None}, opt.init(params), params)
    new = ug.optim.apply_updates(params, updates)
    assert new["a"]["w"].tolist() == [0.5, 2.5] and new["b"].tolist() == [3.0]
    assert ug.optim.apply_updates(params, {"a": {"w": None}, "b": None})["b"].tolist() == [3.0]


def test_not_a_pytree_of_tensors_is_a_clear_error():
    opt = ug.optim.Adam(None, lr=0.1)
    params = {"l1": {"w": ug.ones(2)}}
    with pytest.raises(TypeError, match=r"\[Adam.init\] params must be a pytree of tensors, "
                                        r"but params\['l1'\]\['w'\] is ndarray"):
        opt.init({"l1": {"w": np.ones(2)}})
    with pytest.raises(TypeError, match=r"\[Adam.init\] .* but params is str"):
        opt.init("w")
    state = opt.init(params)
    with pytest.raises(TypeError, match=r"\[Adam.update\] grads\['l1'\]\['w'\] must be a tensor or None, got float"):
        opt.update({"l1": {"w": 1.0}}, state, params)
    with pytest.raises(ValueError, match=r"\[Adam.update\] grads must have the structure of params: "
                                         r"expected a dict with keys \['w'\] at \['l1'\], got a list"):
        opt.update({"l1": [ug.ones(2)]}, state, params)
    with pytest.raises(TypeError, match=r"\[Adam.update\] state\['l1'\]\['w'\] must be a parameter's state dict"):
        opt.update(params, params, params)
    with pytest.raises(TypeError, match=r"\[apply_updates\] updates\['l1'\]\['w'\] must be a tensor or None"):
        ug.optim.apply_updates(params, {"l1": {"w": "x"}})
