"""JAX's functional index updates (x.at[idx].set(v), ...) against JAX 0.10.2 itself: values for
each method and kind of index, repeated and out-of-bounds indices in each mode, gradients, and
the same under ug.jit and ug.vmap. float64 throughout: each element is one or two operations,
so the results agree to a few ulps."""
import os

import numpy as np
import pytest

import unigrad as ug

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True)
def float64_in_jax():
    """JAX in float64 for these tests alone (its global setting would change other tests')."""
    with jax.enable_x64(True):
        yield

X = np.random.default_rng(0).uniform(0.5, 2.0, (4, 5))
V = np.random.default_rng(1).uniform(0.5, 2.0, (4, 5))

# index for x.at[...] -> its values for unigrad and JAX (lists of ints become int arrays)
INDEXES = {
    "int": lambda m: 2,
    "negative int": lambda m: -1,
    "int, int": lambda m: (1, 3),
    "slice": lambda m: slice(1, None, 2),
    "column": lambda m: (slice(None), 2),
    "array": lambda m: m.asarray(np.array([3, 0, 2])),
    "repeated": lambda m: m.asarray(np.array([1, 1, 3, 1])),
    "int and array": lambda m: (2, m.asarray(np.array([4, 0, 4]))),
    "two arrays": lambda m: (m.asarray(np.array([[0], [3]])), m.asarray(np.array([1, 2, 1]))),
    "ellipsis and array": lambda m: (Ellipsis, m.asarray(np.array([0, -1]))),
    "mask": lambda m: m.asarray(X > 1.2),
    "None and slice": lambda m: (None, slice(0, 2)),
}
METHODS = ["set", "add", "subtract", "multiply", "divide", "power", "min", "max"]


def module(m):
    return (ug, ug.tensor) if m == "ug" else (jnp, jnp.asarray)


def update(m, method, name, x, v, **options):
    lib, _ = module(m)
    ref = x.at[INDEXES[name](lib)]
    shape = (x[INDEXES[name](lib)]).shape
    return getattr(ref, method)(v.reshape(-1)[:int(np.prod(shape))].reshape(shape), **options)


def as_numpy(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


@pytest.mark.parametrize("name", INDEXES)
@pytest.mark.parametrize("method", METHODS)
def test_an_update_is_jaxs(method, name):
    got = update("ug", method, name, ug.tensor(X), ug.tensor(V))
    want = update("jax", method, name, jnp.asarray(X), jnp.asarray(V))
    np.testing.assert_allclose(as_numpy(got), as_numpy(want), rtol=1e-14)


@pytest.mark.parametrize("name", INDEXES)
def test_get_and_apply_are_jaxs(name):
    x, xj = ug.tensor(X), jnp.asarray(X)
    np.testing.assert_array_equal(x.at[INDEXES[name](ug)].get().numpy(), as_numpy(xj.at[INDEXES[name](jnp)].get()))
    np.testing.assert_allclose(x.at[INDEXES[name](ug)].apply(ug.sin).numpy(),
                               as_numpy(xj.at[INDEXES[name](jnp)].apply(jnp.sin)), rtol=1e-15)


@pytest.mark.parametrize("mode", [None, "clip", "drop", "fill"])
def test_indices_out_of_bounds_follow_the_mode(mode):
    idx = np.array([1, 7, -2, -9, 3])
    x, xj = ug.tensor(X), jnp.asarray(X)
    if mode != "drop":  # get has no "drop"
        np.testing.assert_array_equal(x.at[ug.tensor(idx)].get(mode=mode).numpy(),
                                      as_numpy(xj.at[idx].get(mode=mode)))
        np.testing.assert_array_equal(x.at[1, 9].get(mode=mode).numpy(), as_numpy(xj.at[1, 9].get(mode=mode)))
    if mode != "fill":  # nor the updates "fill"
        v = np.arange(25.0).reshape(5, 5)
        np.testing.assert_array_equal(x.at[ug.tensor(idx)].set(ug.tensor(v), mode=mode).numpy(),
                                      as_numpy(xj.at[idx].set(v, mode=mode)))
        np.testing.assert_array_equal(x.at[ug.tensor(idx)].add(ug.tensor(v), mode=mode).numpy(),
                                      as_numpy(xj.at[idx].add(v, mode=mode)))
        np.testing.assert_array_equal(x.at[9, 1].set(0.0, mode=mode).numpy(), as_numpy(xj.at[9, 1].set(0.0, mode=mode)))
    with pytest.raises(IndexError):  # in bounds by promise: indexed as x[idx] is
        x.at[ug.tensor(idx)].set(0.0, mode="promise_in_bounds")


def test_a_fill_of_integers_and_an_integer_update_are_jaxs():
    x, xj = ug.arange(5), jnp.arange(5)
    np.testing.assert_array_equal(x.at[ug.tensor([1, 8])].get(mode="fill").numpy(),
                                  as_numpy(xj.at[jnp.array([1, 8])].get(mode="fill")))
    np.testing.assert_array_equal(x.at[1].add(2).numpy(), as_numpy(xj.at[1].add(2)))


@pytest.mark.parametrize("method", METHODS)
def test_gradients_are_jaxs(method):
    # JAX differentiates a repeated index for these and min and max, a product only where
    # told that its indices are unique
    product = method in ("multiply", "divide", "power")
    name, options = ("array", {"unique_indices": True}) if product else ("repeated", {})

    def f(m, x, v):
        lib = ug if m == "ug" else jnp
        return (update(m, method, name, x, v, **options) ** 2).sum() + (x * lib.sin(x)).sum()

    got = ug.grad(lambda x, v: f("ug", x, v), argnums=(0, 1))(ug.tensor(X), ug.tensor(V))
    want = jax.grad(lambda x, v: f("jax", x, v), argnums=(0, 1))(jnp.asarray(X), jnp.asarray(V))
    if method == "set":  # which repeated value JAX keeps is unspecified: compare x's gradient only
        got, want = got[:1], want[:1]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), as_numpy(w), rtol=1e-13, atol=1e-13)


def test_the_tensor_itself_is_unchanged_and_programs_and_batches_agree():
    x = ug.tensor(X)

    def f(x, i):
        return x.at[i].add(1.0).at[:, 0].multiply(x[:, 1]).at[i, 2].get(mode="fill")

    i = ug.tensor([3, 0, 5])
    want = f(x, i)
    np.testing.assert_array_equal(x.numpy(), X)
    np.testing.assert_array_equal(ug.jit(f)(x, i).numpy(), want.numpy())
    batched = ug.vmap(f, in_axes=(0, None))(ug.stack([x, x * 2]), i)
    np.testing.assert_array_equal(batched[0].numpy(), want.numpy())
    np.testing.assert_array_equal(batched[1].numpy(), f(x * 2, i).numpy())


def test_apply_under_jit_needs_indices_that_do_not_repeat():
    x, i = ug.tensor(X), ug.tensor([2, 0])
    with pytest.raises(ValueError, match=r"\[at.apply\] under ug.jit .*unique_indices=True"):
        ug.jit(lambda x, i: x.at[i].apply(ug.exp))(x, i)
    got = ug.jit(lambda x, i: x.at[i].apply(ug.exp, unique_indices=True))(x, i)
    np.testing.assert_allclose(got.numpy(), as_numpy(jnp.asarray(X).at[jnp.array([2, 0])].apply(jnp.exp)),
                               rtol=1e-15)
