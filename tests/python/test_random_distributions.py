"""jax.random's distributions (truncated_normal, exponential, laplace, logistic, cauchy, gumbel,
rademacher, lognormal, choice, multivariate_normal, orthogonal, gamma, beta, dirichlet,
chisquare, t) against the distributions
themselves: unigrad's draws are Philox bits, not JAX's, so each is checked by a
Kolmogorov-Smirnov distance to SciPy's distribution function, or by moments within 5 standard
errors. The keys are fixed, so each check either always passes or always fails; the KS bound
is the 99.9% critical value 1.95 / sqrt(n)."""
import os

import numpy as np
import pytest
from scipy import stats

import unigrad as ug

N = 100_000
KEY = ug.random.key(7)


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


CONTINUOUS = [
    ("truncated_normal", lambda k, n: ug.random.truncated_normal(k, -0.5, 2.0, (n,), dtype=ug.float64),
     stats.truncnorm(-0.5, 2.0)),
    ("exponential", lambda k, n: ug.random.exponential(k, (n,), dtype=ug.float64), stats.expon()),
    ("laplace", lambda k, n: ug.random.laplace(k, (n,), dtype=ug.float64), stats.laplace()),
    ("logistic", lambda k, n: ug.random.logistic(k, (n,), dtype=ug.float64), stats.logistic()),
    ("cauchy", lambda k, n: ug.random.cauchy(k, (n,), dtype=ug.float64), stats.cauchy()),
    ("gumbel", lambda k, n: ug.random.gumbel(k, (n,), dtype=ug.float64), stats.gumbel_r()),
    ("lognormal", lambda k, n: ug.random.lognormal(k, 0.7, (n,), dtype=ug.float64), stats.lognorm(0.7)),
]


CONTINUOUS += [
    (f"gamma {a}", lambda k, n, a=a: ug.random.gamma(k, a, (n,), dtype=ug.float64), stats.gamma(a))
    for a in (0.3, 1.0, 2.5, 40.0)  # below 1 the draws go through Gamma(a + 1) * U^(1/a)
] + [
    ("beta", lambda k, n: ug.random.beta(k, 2.0, 0.5, (n,), dtype=ug.float64), stats.beta(2.0, 0.5)),
    ("chisquare", lambda k, n: ug.random.chisquare(k, 3.0, (n,), dtype=ug.float64), stats.chi2(3.0)),
    ("t", lambda k, n: ug.random.t(k, 2.5, (n,), dtype=ug.float64), stats.t(2.5)),
]


@pytest.mark.parametrize("name,draw,dist", CONTINUOUS, ids=[c[0] for c in CONTINUOUS])
def test_continuous_draws_follow_their_distribution(name, draw, dist):
    x = draw(KEY, N).numpy()
    assert x.shape == (N,) and x.dtype == np.float64 and np.isfinite(x).all()
    assert stats.kstest(x, dist.cdf).statistic < 1.95 / np.sqrt(N)
    np.testing.assert_array_equal(draw(KEY, N).numpy(), x)  # a key is a value: the same draws
    assert not np.array_equal(draw(ug.random.split(KEY)[1], N).numpy(), x)


@pytest.mark.parametrize("name", ["exponential", "laplace", "logistic", "cauchy", "gumbel", "truncated_normal",
                                  "lognormal"])
def test_shapes_and_dtypes_as_jax(jax, name):
    args = {"truncated_normal": (-1.0, 1.0), "lognormal": (0.5,)}.get(name, ())
    j = getattr(jax.random, name)(jax.random.key(0), *args, shape=(3, 2))
    u = getattr(ug.random, name)(KEY, *args, shape=(3, 2))
    assert tuple(u.shape) == j.shape == (3, 2) and u.dtype == ug.float32 and str(j.dtype) == "float32"
    assert tuple(getattr(ug.random, name)(KEY, *args).shape) == ()
    with pytest.raises(TypeError, match=f"random.{name}.*floating dtype"):
        getattr(ug.random, name)(KEY, *args, shape=(2,), dtype=ug.int32)


def test_truncated_normal_stays_inside_its_bounds_in_float32():
    x = ug.random.truncated_normal(KEY, 3.0, 3.5, (N,)).numpy()  # a far tail, where erfinv is steep
    assert x.min() > 3.0 and x.max() < 3.5
    with pytest.raises(ValueError, match=r"random.truncated_normal\] needs lower < upper"):
        ug.random.truncated_normal(KEY, 1.0, 1.0, (2,))


def test_rademacher():
    x = ug.random.rademacher(KEY, (N,)).numpy()
    assert x.dtype == np.int32 and set(np.unique(x)) == {-1, 1}
    assert abs(x.mean()) < 5 / np.sqrt(N)


def test_choice_with_and_without_replacement(jax):
    p = np.array([0.1, 0.2, 0.3, 0.4])
    picks = ug.random.choice(KEY, 4, (N,), p=ug.tensor(p)).numpy()
    freq = np.bincount(picks, minlength=4) / N
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / N))
    uniform_picks = ug.random.choice(KEY, 5, (N,)).numpy()
    assert set(np.unique(uniform_picks)) == set(range(5))
    # without replacement: distinct entries; weighted, the first pick follows p
    keys = ug.random.split(KEY, 2000)
    firsts = np.array([int(ug.random.choice(keys[i], 4, (3,), replace=False, p=ug.tensor(p))[0])
                       for i in range(2000)])
    assert np.all(np.abs(np.bincount(firsts, minlength=4) / 2000 - p) < 5 * np.sqrt(p * (1 - p) / 2000))
    for i in range(20):
        drawn = ug.random.choice(keys[i], 10, (2, 3), replace=False).numpy()
        assert drawn.shape == (2, 3) and len(set(drawn.ravel())) == 6
    assert jax.random.choice(jax.random.key(0), 10, (2, 3), replace=False).shape == (2, 3)
    # from an array, along an axis: the picked axis replaced by `shape`, as JAX's
    a = ug.arange(24).reshape(2, 3, 4)
    out = ug.random.choice(KEY, a, (5,), axis=1)
    assert tuple(out.shape) == jax.random.choice(jax.random.key(0), np.arange(24).reshape(2, 3, 4), (5,),
                                                 axis=1).shape == (2, 5, 4)
    rows = a.numpy()[:, :, 0] // 4
    assert np.all(np.isin(out.numpy()[:, :, 0] // 4, rows))
    with pytest.raises(ValueError, match=r"cannot take 6 entries from 5 without replacement"):
        ug.random.choice(KEY, 5, (6,), replace=False)
    with pytest.raises(ValueError, match=r"p must be 1-d with one probability per entry \(5\)"):
        ug.random.choice(KEY, 5, (2,), p=ug.ones(4))


def test_multivariate_normal_covariance():
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [-0.3, 0.2, 0.5]])
    cov = a @ a.T
    x = ug.random.multivariate_normal(KEY, ug.tensor(mean), ug.tensor(cov), (N,)).numpy()
    assert x.shape == (N, 3) and x.dtype == np.float64
    se = np.sqrt(np.diag(cov) / N)
    assert np.all(np.abs(x.mean(0) - mean) < 5 * se)
    sample_cov = np.cov(x.T)
    cov_se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / N)
    assert np.all(np.abs(sample_cov - cov) < 5 * cov_se)
    batched = ug.random.multivariate_normal(KEY, ug.zeros(4, 3, dtype=ug.float64), ug.tensor(cov))
    assert tuple(batched.shape) == (4, 3)
    with pytest.raises(ValueError, match="method 'eigh' is not supported"):
        ug.random.multivariate_normal(KEY, ug.tensor(mean), ug.tensor(cov), method="eigh")
    with pytest.raises(ValueError, match=r"needs mean \[..., n\] and cov \[..., n, n\]"):
        ug.random.multivariate_normal(KEY, ug.tensor(mean), ug.eye(2, dtype=ug.float64))


def test_orthogonal_matrices_are_orthogonal_and_haar():
    q = ug.random.orthogonal(KEY, 4, (2000,), dtype=ug.float64).numpy()
    assert q.shape == (2000, 4, 4)
    np.testing.assert_allclose(q @ q.transpose(0, 2, 1), np.broadcast_to(np.eye(4), q.shape), atol=1e-12)
    # Haar: each entry is a coordinate of a uniform point on the sphere, mean 0, variance 1/n
    entries = q[:, 0, 0]
    assert abs(entries.mean()) < 5 * np.sqrt(0.25 / 2000)
    assert abs(entries.var() - 0.25) < 5 * np.sqrt(2 * 0.25 ** 2 / 2000)
    signs = np.sign(np.linalg.det(q))
    assert set(np.unique(signs)) == {-1.0, 1.0}


def test_gamma_parameters_broadcast_and_dirichlet(jax):
    a = ug.tensor([0.5, 1.0, 4.0], dtype=ug.float64)
    x = ug.random.gamma(KEY, a, (N, 3), dtype=ug.float64).numpy()
    assert tuple(ug.random.gamma(KEY, a).shape) == jax.random.gamma(jax.random.key(0), np.ones(3)).shape == (3,)
    for j, aj in enumerate([0.5, 1.0, 4.0]):  # each column its own a: mean a, variance a
        assert abs(x[:, j].mean() - aj) < 5 * np.sqrt(aj / N)
    alpha = np.array([1.0, 2.0, 3.0])
    d = ug.random.dirichlet(KEY, ug.tensor(alpha), (N,), dtype=ug.float64).numpy()
    assert d.shape == (N, 3) == jax.random.dirichlet(jax.random.key(0), alpha, (N,)).shape
    np.testing.assert_allclose(d.sum(1), 1.0, rtol=4 * np.finfo(np.float64).eps)
    mean = alpha / alpha.sum()
    var = mean * (1 - mean) / (alpha.sum() + 1)
    assert np.all(np.abs(d.mean(0) - mean) < 5 * np.sqrt(var / N))
    with pytest.raises(ValueError, match=r"random.gamma\] a must be positive"):
        ug.random.gamma(KEY, ug.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"random.t\] df must be positive"):
        ug.random.t(KEY, -1.0, (2,))
    with pytest.raises(ValueError, match="alpha must have at least one dimension"):
        ug.random.dirichlet(KEY, 1.0)
