"""Random numbers: the global seed and JAX-style keys, reproducible on any thread count,
with the right distributions."""
import numpy as np
import pytest

import unigrad as ug


def test_manual_seed_reproduces():
    ug.manual_seed(0)
    a = ug.randn(3, 4)
    b = ug.rand(5)
    ug.manual_seed(0)
    np.testing.assert_array_equal(a.numpy(), ug.randn(3, 4).numpy())
    np.testing.assert_array_equal(b.numpy(), ug.rand(5).numpy())
    assert not np.array_equal(a.numpy(), ug.randn(3, 4).numpy())


def test_same_numbers_on_any_thread_count():
    n = ug.get_num_threads()
    results = []
    for threads in (1, 2, 3):
        ug.set_num_threads(threads)
        ug.manual_seed(123)
        results.append((ug.randn(300_001).numpy(), ug.rand(100_000, dtype=ug.float64).numpy(),
                        ug.randint(0, 1000, (50_000,)).numpy()))
    ug.set_num_threads(n)
    for r in results[1:]:
        for x, y in zip(results[0], r):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", [ug.float32, ug.float64, ug.float16, ug.bfloat16])
def test_distributions(dtype):
    ug.manual_seed(1)
    u = ug.rand(200_000, dtype=dtype).float().numpy()
    assert u.min() >= 0 and u.max() <= 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.01
    z = ug.randn(200_000, dtype=dtype).float().numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    g = ug.normal(3.0, 2.0, (200_000,)).numpy()
    assert abs(g.mean() - 3) < 0.03 and abs(g.std() - 2) < 0.03


def test_randint_and_randperm():
    ug.manual_seed(2)
    r = ug.randint(-5, 5, (100_000,)).numpy()
    assert r.min() == -5 and r.max() == 4 and ug.randint(10, (3,)).dtype == ug.int64
    counts = np.bincount(r + 5)
    assert counts.min() > 9000
    p = ug.randperm(1000).numpy()
    assert sorted(p.tolist()) == list(range(1000))
    with pytest.raises(ValueError):
        ug.randint(5, 5, (3,))
    with pytest.raises(TypeError):
        ug.randn(3, dtype=ug.int64)


def test_keys_are_pure_and_split():
    k = ug.random.key(0)
    k1, k2 = ug.random.split(k)
    a = ug.random.normal(k1, (4, 5))
    assert a.shape == (4, 5)
    np.testing.assert_array_equal(a.numpy(), ug.random.normal(k1, (4, 5)).numpy())
    assert not np.array_equal(a.numpy(), ug.random.normal(k2, (4, 5)).numpy())
    ug.manual_seed(0)
    before = ug.rand(3).numpy()
    ug.manual_seed(0)
    ug.random.uniform(k1, (10,))
    np.testing.assert_array_equal(before, ug.rand(3).numpy())  # keys never touch the global state
    keys = ug.random.split(k, 4)
    assert keys.shape == (4, 2) and len({tuple(x.tolist()) for x in keys}) == 4
    assert ug.random.fold_in(k, 1).tolist() != ug.random.fold_in(k, 2).tolist()


def test_key_distributions():
    k = ug.random.key(42)
    u = ug.random.uniform(k, (100_000,), minval=-1, maxval=3).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.02
    b = ug.random.bernoulli(k, 0.3, (100_000,)).numpy()
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.01
    r = ug.random.randint(k, (1000,), 0, 7).numpy()
    assert r.min() == 0 and r.max() == 6
    p = ug.random.permutation(k, 100).numpy()
    assert sorted(p.tolist()) == list(range(100))
    x = ug.arange(10).reshape(5, 2)
    shuffled = ug.random.permutation(k, x).numpy()
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, x.numpy().tolist()))
    with pytest.raises(TypeError):
        ug.random.normal(ug.zeros(3), (2,))


def test_rng_state_roundtrip():
    ug.manual_seed(5)
    ug.rand(7)
    state = ug.get_rng_state()
    a = ug.rand(4).numpy()
    ug.set_rng_state(state)
    np.testing.assert_array_equal(a, ug.rand(4).numpy())
