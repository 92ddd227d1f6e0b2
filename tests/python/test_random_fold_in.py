"""ug.random.fold_in with an integer tensor as data (jax.random.fold_in takes traced and batched
data): the same key as with the int, under jit (the data each run is given), vmap (a batch of
data or of keys gives a batch of keys, without mapping example by example) and fori_loop."""
import numpy as np
import pytest

import unigrad as ug

KEY = ug.random.PRNGKey(0)
DATA = [0, 3, -1, 2**40, 7]


def folded(key, data):
    """fold_in with Python ints: the reference."""
    return ug.random.fold_in(key, int(data)).numpy()


@pytest.mark.parametrize("dtype", [ug.int64, ug.int32, ug.uint8, ug.bool])
def test_tensor_data_gives_the_ints_key(dtype):
    for d in [0, 1] if dtype == ug.bool else [0, 3, 200]:
        assert np.array_equal(ug.random.fold_in(KEY, ug.tensor(d, dtype=dtype)).numpy(), folded(KEY, d))


def test_jit_folds_in_the_data_of_each_run():
    f = ug.jit(lambda k, step: ug.random.fold_in(k, step))
    draw = ug.jit(lambda k, step: ug.random.normal(ug.random.fold_in(k, step), (2,)))
    other = ug.random.PRNGKey(5)
    for d in DATA:
        assert np.array_equal(f(KEY, ug.tensor(d)).numpy(), folded(KEY, d))
        assert np.array_equal(f(other, ug.tensor(d)).numpy(), folded(other, d))
        expected = ug.random.normal(ug.random.fold_in(KEY, d), (2,)).numpy()
        assert np.array_equal(draw(KEY, ug.tensor(d)).numpy(), expected)


def test_vmap_over_data_and_keys_is_batched():
    keys = ug.random.split(KEY, len(DATA))
    data = ug.tensor(DATA)
    before = ug._C._functional.vmap_fallbacks()
    over_data = ug.vmap(lambda i: ug.random.fold_in(KEY, i))(data)
    over_both = ug.vmap(ug.random.fold_in)(keys, data)
    over_keys = ug.vmap(lambda k: ug.random.fold_in(k, ug.tensor(9)))(keys)
    assert ug._C._functional.vmap_fallbacks() == before, "vmap mapped example by example"
    assert np.array_equal(over_data.numpy(), np.stack([folded(KEY, d) for d in DATA]))
    assert np.array_equal(over_both.numpy(), np.stack([folded(keys[j], d) for j, d in enumerate(DATA)]))
    assert np.array_equal(over_keys.numpy(), np.stack([folded(keys[j], 9) for j in range(len(DATA))]))


def test_nested_vmap_and_vmap_of_jit():
    keys = ug.random.split(KEY, 3)
    out = ug.vmap(lambda k: ug.vmap(lambda i: ug.random.fold_in(k, i))(ug.arange(4)))(keys)
    assert np.array_equal(out.numpy(), np.stack([[folded(keys[j], i) for i in range(4)] for j in range(3)]))
    out = ug.vmap(lambda i: ug.vmap(lambda k: ug.random.fold_in(k, i))(keys))(ug.arange(4))
    assert np.array_equal(out.numpy(), np.stack([[folded(keys[j], i) for j in range(3)] for i in range(4)]))
    jitted = ug.jit(lambda k, i: ug.random.fold_in(k, i))
    out = ug.vmap(jitted)(keys, ug.tensor([4, 5, 6]))
    assert np.array_equal(out.numpy(), np.stack([folded(keys[j], 4 + j) for j in range(3)]))


def test_fori_loop_with_traced_bounds():
    f = ug.jit(lambda k, n: ug.lax.fori_loop(
        0, n, lambda i, c: c + ug.random.normal(ug.random.fold_in(k, i), ()), ug.tensor(0.0)))
    for n in [3, 5]:
        expected = sum(ug.random.normal(ug.random.fold_in(KEY, i), ()).item() for i in range(n))
        assert f(KEY, ug.tensor(n)).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("data", [ug.tensor(1.5), ug.tensor([1, 2])])
def test_bad_data_is_refused(data):
    with pytest.raises(TypeError, match=r"\[random.fold_in\] data must be an integer scalar"):
        ug.random.fold_in(KEY, data)
