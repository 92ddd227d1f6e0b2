"""ug.lax's dynamic slicing and helpers against jax.lax (0.10.2) on the same values: dynamic_slice
and dynamic_update_slice with in-range and clamped starts, their gradients, a start per example
under vmap, a traced start inside a compiled fori_loop; the *_in_dim forms, map, select, top_k.
Slicing and copying are exact, so values compare equal; gradients of sums of slices are sums of
ones, exact too."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import unigrad as ug

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 6, 4)).astype(np.float32)

# In range, at the end, negative (from the end, as JAX's allow_negative_indices) and clamped.
STARTS = [(0, 0, 0), (1, 2, 1), (4, 5, 3), (-3, 9, 2), (-9, -1, -4)]
SIZES = [(2, 3, 4), (1, 6, 2), (5, 1, 1)]


@pytest.mark.parametrize("starts", STARTS)
@pytest.mark.parametrize("sizes", SIZES)
def test_dynamic_slice_matches_jax(starts, sizes):
    want = jax.lax.dynamic_slice(jnp.asarray(X), starts, sizes)
    got = ug.lax.dynamic_slice(ug.tensor(X), [ug.tensor(s) for s in starts], sizes)
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    assert ug.equal(ug.lax.dynamic_slice(ug.tensor(X), starts, sizes), got)  # ints as well as tensors
    if min(starts) >= 0:
        want = jax.lax.dynamic_slice(jnp.asarray(X), starts, sizes, allow_negative_indices=False)
        got = ug.lax.dynamic_slice(ug.tensor(X), starts, sizes, allow_negative_indices=False)
        np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    else:  # a negative int start: JAX refuses it; a tensor start is clamped (JAX's traced ones are)
        with pytest.raises(ValueError, match="out of bounds .* if allow_negative_indices=False"):
            ug.lax.dynamic_slice(ug.tensor(X), starts, sizes, allow_negative_indices=False)
        want = jax.jit(lambda s: jax.lax.dynamic_slice(jnp.asarray(X), s, sizes, allow_negative_indices=False))(
            jnp.asarray(starts))
        got = ug.lax.dynamic_slice(ug.tensor(X), [ug.tensor(s) for s in starts], sizes, allow_negative_indices=False)
        np.testing.assert_array_equal(got.numpy(), np.asarray(want))


@pytest.mark.parametrize("starts", STARTS)
def test_dynamic_update_slice_and_its_gradients_match_jax(starts):
    update = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    want = jax.lax.dynamic_update_slice(jnp.asarray(X), jnp.asarray(update), starts)
    got = ug.lax.dynamic_update_slice(ug.tensor(X), ug.tensor(update), starts)
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    weights = RNG.standard_normal(X.shape).astype(np.float32)  # a loss that tells positions apart

    def jax_loss(x, u):
        return (jax.lax.dynamic_update_slice(x, u, starts) * weights).sum()

    def ug_loss(x, u):
        return (ug.lax.dynamic_update_slice(x, u, starts) * ug.tensor(weights)).sum()
    want_dx, want_du = jax.grad(jax_loss, argnums=(0, 1))(jnp.asarray(X), jnp.asarray(update))
    got_dx, got_du = ug.grad(ug_loss, argnums=(0, 1))(ug.tensor(X), ug.tensor(update))
    np.testing.assert_array_equal(got_dx.numpy(), np.asarray(want_dx))
    np.testing.assert_array_equal(got_du.numpy(), np.asarray(want_du))


def test_dynamic_slice_gradient_matches_jax():
    starts = (3, 4, 1)
    want = jax.grad(lambda x: (jax.lax.dynamic_slice(x, starts, (3, 3, 2)) ** 2).sum())(jnp.asarray(X))
    got = ug.grad(lambda x: (ug.lax.dynamic_slice(x, starts, (3, 3, 2)) ** 2).sum())(ug.tensor(X))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


def test_a_start_per_example_under_vmap():
    starts = np.array([0, 3, 5, -1])
    want = jax.vmap(lambda i: jax.lax.dynamic_slice_in_dim(jnp.asarray(X[0]), i, 2, axis=0))(starts)
    got = ug.vmap(lambda i: ug.lax.dynamic_slice_in_dim(ug.tensor(X[0]), i, 2, axis=0))(ug.tensor(starts))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    rows = RNG.standard_normal((4, 6)).astype(np.float32)
    want = jax.vmap(lambda i, r: jax.lax.dynamic_update_index_in_dim(jnp.asarray(X[:, :, 0]), r, i, 0))(starts, rows)
    got = ug.vmap(lambda i, r: ug.lax.dynamic_update_index_in_dim(ug.tensor(X[:, :, 0]), r, i, 0))(
        ug.tensor(starts), ug.tensor(rows))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


def test_a_traced_start_inside_a_compiled_loop():
    # A sliding window over the rows, the loop counter as the start: one program for any x.
    def windows(x):
        def body(i, acc):
            return acc + ug.lax.dynamic_slice_in_dim(x, i, 2, axis=0)
        return ug.fori_loop(0, x.shape[0] - 1, body, ug.zeros(2, x.shape[1]))

    def jax_windows(x):
        def body(i, acc):
            return acc + jax.lax.dynamic_slice_in_dim(x, i, 2, axis=0)
        return jax.lax.fori_loop(0, x.shape[0] - 1, body, jnp.zeros((2, x.shape[1])))

    jitted = ug.jit(windows)
    for x in (X[:, :, 0], X[:, :, 1]):
        want = np.asarray(jax.jit(jax_windows)(jnp.asarray(x)))
        got = jitted(ug.tensor(x)).numpy()
        # Each element sums 4 values in the same order: float32 rounding is the same in both.
        np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(np.float32).eps * np.abs(x).sum())
    assert jitted.cache_info().traces == 1
    i = ug.tensor(2)
    first = ug.jit(lambda x, i: ug.lax.dynamic_index_in_dim(x, i, 1, keepdims=False))
    assert ug.equal(first(ug.tensor(X), i), ug.tensor(X[:, 2]))
    assert ug.equal(first(ug.tensor(X), ug.tensor(5)), ug.tensor(X[:, 5])) and first.cache_info().traces == 1


def test_map_select_top_k_match_jax():
    xs = RNG.standard_normal((5, 7)).astype(np.float32)
    want = jax.lax.map(lambda r: jnp.sort(r)[:3] * 2, jnp.asarray(xs))
    got = ug.lax.map(lambda r: r.sort()[0][:3] * 2, ug.tensor(xs))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    pred = xs > 0
    np.testing.assert_array_equal(ug.lax.select(ug.tensor(pred), ug.tensor(xs), ug.tensor(-xs)).numpy(),
                                  np.asarray(jax.lax.select(pred, xs, -xs)))
    values, indices = ug.lax.top_k(ug.tensor(xs), 3)
    want_values, want_indices = jax.lax.top_k(jnp.asarray(xs), 3)
    np.testing.assert_array_equal(values.numpy(), np.asarray(want_values))
    np.testing.assert_array_equal(indices.numpy(), np.asarray(want_indices))


def test_bad_input_names_the_op_and_shapes():
    x = ug.tensor(X)
    with pytest.raises(ValueError, match=r"dynamic_slice\] needs one start index and one size per dim"):
        ug.lax.dynamic_slice(x, [0, 0], [1, 1])
    with pytest.raises(ValueError, match=r"size 7 in dim 1 must be within the operand's 6"):
        ug.lax.dynamic_slice(x, [0, 0, 0], [1, 7, 1])
    with pytest.raises(TypeError, match="start index 0 must be an integer scalar tensor, got float32"):
        ug.lax.dynamic_slice(x, [ug.tensor(1.0), 0, 0], [1, 1, 1])
    with pytest.raises(ValueError, match=r"update \(shape \[2, 2\]\) must have the operand's rank"):
        ug.lax.dynamic_update_slice(x, ug.zeros(2, 2), [0, 0, 0])
    with pytest.raises(TypeError, match="dtype"):
        ug.lax.dynamic_update_slice(x, ug.zeros(1, 1, 1, dtype=ug.float64), [0, 0, 0])
    with pytest.raises(ValueError, match="one shape"):
        ug.lax.select(ug.tensor([True]), ug.ones(2), ug.ones(2))
