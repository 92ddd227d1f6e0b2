"""jax.random's distributions (truncated_normal, exponential, laplace, logistic, cauchy, gumbel,
rademacher, lognormal, choice, multivariate_normal, orthogonal, gamma, beta, dirichlet,
chisquare, t, loggamma, weibull_min, pareto, rayleigh, maxwell, double_sided_maxwell, wald,
generalized_normal, triangular, ball, and the counts poisson, binomial and geometric), and
torch's global-generator spellings (poisson, binomial, geometric_, cauchy_, log_normal_),
against the distributions themselves: unigrad's draws are Philox bits, not JAX's or torch's,
so each continuous one is checked by a Kolmogorov-Smirnov distance to SciPy's distribution
function, each count by a chi-square test against SciPy's probabilities, and moments within 5
standard errors. The keys and seeds are fixed, so each check either always passes or always
fails; the KS bound is the 99.9% critical value 1.95 / sqrt(n), the chi-square p-value floor
1e-4."""
import os
import types

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


def _double_sided_maxwell(loc, scale):
    def cdf(x):
        z = (np.asarray(x) - loc) / scale
        return 0.5 + 0.5 * np.sign(z) * stats.maxwell.cdf(np.abs(z))
    return types.SimpleNamespace(cdf=cdf)


MORE_CONTINUOUS = [
    ("weibull_min", lambda k, n: ug.random.weibull_min(k, 1.5, 0.8, (n,), dtype=ug.float64),
     stats.weibull_min(0.8, scale=1.5)),
    ("pareto", lambda k, n: ug.random.pareto(k, 3.0, (n,), dtype=ug.float64), stats.pareto(3.0)),
    ("rayleigh", lambda k, n: ug.random.rayleigh(k, 2.0, (n,), dtype=ug.float64), stats.rayleigh(scale=2.0)),
    ("maxwell", lambda k, n: ug.random.maxwell(k, (n,), dtype=ug.float64), stats.maxwell()),
    ("double_sided_maxwell",
     lambda k, n: ug.random.double_sided_maxwell(k, 1.0, 2.0, (n,), dtype=ug.float64), _double_sided_maxwell(1.0, 2.0)),
    ("wald", lambda k, n: ug.random.wald(k, 0.5, (n,), dtype=ug.float64), stats.invgauss(0.5)),
    # a large mean, where the textbook root mu + mu^2 y / 2 - ... cancels
    ("wald large mean", lambda k, n: ug.random.wald(k, 1e4, (n,), dtype=ug.float64), stats.invgauss(1e4)),
    ("triangular", lambda k, n: ug.random.triangular(k, -1.0, 0.5, 2.0, (n,), dtype=ug.float64),
     stats.triang(0.5, loc=-1.0, scale=3.0)),
] + [
    (f"generalized_normal {p}", lambda k, n, p=p: ug.random.generalized_normal(k, p, (n,), dtype=ug.float64),
     stats.gennorm(p)) for p in (0.5, 2.0, 5.0)
] + [
    # a = 0.02: most Gamma(a) draws underflow even float64, their logs do not
    (f"loggamma {a}", lambda k, n, a=a: ug.random.loggamma(k, a, (n,), dtype=ug.float64), stats.loggamma(a))
    for a in (0.02, 3.0)
]


@pytest.mark.parametrize("name,draw,dist", MORE_CONTINUOUS, ids=[c[0] for c in MORE_CONTINUOUS])
def test_more_continuous_draws_follow_their_distribution(name, draw, dist):
    test_continuous_draws_follow_their_distribution(name, draw, dist)


@pytest.mark.parametrize("p", [0.7, 2.0, 4.0])
def test_ball_is_uniform_in_the_unit_ball(jax, p):
    d = 3
    x = ug.random.ball(KEY, d, p, (N,), dtype=ug.float64).numpy()
    assert x.shape == (N, d) and x.dtype == np.float64
    # uniform in the p-ball: P(|x|_p <= r) = r^d, and each coordinate symmetric about 0
    r = (np.abs(x) ** p).sum(1) ** (1 / p)
    assert r.max() < 1 and stats.kstest(r ** d, "uniform").statistic < 1.95 / np.sqrt(N)
    assert np.all(np.abs(np.sign(x).mean(0)) < 5 / np.sqrt(N))
    assert tuple(ug.random.ball(KEY, 4, shape=(5,)).shape) == jax.random.ball(jax.random.key(0), 4, shape=(5,)).shape
    assert tuple(ug.random.ball(KEY, 4).shape) == jax.random.ball(jax.random.key(0), 4).shape == (4,)


def _chi_square(x, dist):
    """The chi-square p-value of integer draws x against a SciPy distribution: one bin for each k
    whose expected count is at least 5, the two tails lumped into the outer bins."""
    n = len(x)
    lo, hi = int(dist.ppf(1e-12)), int(dist.isf(1e-12)) + 1
    ks = np.arange(lo, hi + 1)
    ks = ks[n * dist.pmf(ks) >= 5]
    first, last = ks[0], ks[-1]
    assert len(ks) == last - first + 1  # unimodal: the bins are consecutive
    expected = np.concatenate([[dist.cdf(first)], dist.pmf(ks[1:-1]), [dist.sf(last - 1)]]) * n
    inner = np.bincount(np.clip(x, first, last) - first, minlength=last - first + 1)
    return stats.chisquare(inner, expected * n / expected.sum()).pvalue


def _check_counts(x, dist):
    assert _chi_square(x, dist) > 1e-4
    mean, var, kurt = dist.stats(moments="mvk")
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / len(x))
    assert abs(x.var() - var) < 5 * var * np.sqrt((kurt + 2) / len(x))


# Rates either side of 10 (inversion below, PTRS from there) and far above it.
@pytest.mark.parametrize("lam", [0.3, 4.0, 9.99, 10.0, 37.5, 1e5])
def test_poisson_counts(lam):
    x = ug.random.poisson(KEY, lam, (N,)).numpy()
    assert x.dtype == np.int32
    _check_counts(x, stats.poisson(lam))
    np.testing.assert_array_equal(ug.random.poisson(KEY, lam, (N,)).numpy(), x)


# n q below and above 10 (inversion, BTRS), with p either side of 1/2 (drawn for 1 - p).
@pytest.mark.parametrize("n,p", [(5, 0.3), (30, 0.2), (100, 0.3), (100, 0.8), (1000, 0.05), (1000, 0.999),
                                 (10 ** 7, 0.4)])
def test_binomial_counts(n, p):
    x = ug.random.binomial(KEY, n, p, (N,), dtype=ug.float64).numpy()
    assert x.dtype == np.float64 and np.all(x == np.round(x)) and x.min() >= 0 and x.max() <= n
    _check_counts(x.astype(np.int64), stats.binom(n, p))


@pytest.mark.parametrize("p", [0.03, 0.5, 0.9])
def test_geometric_counts(p):
    x = ug.random.geometric(KEY, p, (N,)).numpy()
    assert x.dtype == np.int32 and x.min() >= 1
    _check_counts(x, stats.geom(p))


def test_count_parameters_broadcast_and_edges():
    lam = ug.tensor([0.0, 2.0, 50.0], dtype=ug.float64)  # both algorithms in one draw
    x = ug.random.poisson(KEY, lam, (N, 3)).numpy()
    assert x.shape == (N, 3) and np.all(x[:, 0] == 0)
    for j, lj in enumerate([2.0, 50.0], start=1):
        _check_counts(x[:, j], stats.poisson(lj))
    b = ug.random.binomial(KEY, ug.tensor([[0.0], [7.0], [400.0]]), ug.tensor([0.0, 1.0, 0.35]))
    assert b.dtype == ug.float32 and tuple(b.shape) == (3, 3)
    np.testing.assert_array_equal(b.numpy()[:, :2], [[0, 0], [0, 7], [0, 400]])
    assert np.all(ug.random.geometric(KEY, 1.0, (100,)).numpy() == 1)
    assert tuple(ug.random.poisson(KEY, 2.0, (0,)).shape) == (0,)
    assert ug.random.poisson(KEY, 3.0, (4,), dtype=ug.int64).dtype == ug.int64


def test_count_shapes_and_dtypes_as_jax(jax):
    jk = jax.random.key(0)
    for name, args in [("poisson", (3.0,)), ("geometric", (0.3,)), ("binomial", (10.0, 0.3))]:
        j = getattr(jax.random, name)(jk, *args, shape=(3, 2))
        u = getattr(ug.random, name)(KEY, *args, shape=(3, 2))
        assert tuple(u.shape) == j.shape and str(u.dtype).split(".")[-1] == str(j.dtype)
        assert tuple(getattr(ug.random, name)(KEY, *args).shape) == getattr(jax.random, name)(jk, *args).shape == ()
    assert tuple(ug.random.poisson(KEY, ug.ones(4)).shape) == jax.random.poisson(jk, np.ones(4)).shape == (4,)
    assert tuple(ug.random.binomial(KEY, 10, ug.full((2, 3), 0.5)).shape) == (2, 3)


@pytest.mark.parametrize("name,args", [
    ("weibull_min", (1.0, 2.0)), ("pareto", (3.0,)), ("rayleigh", (1.0,)), ("maxwell", ()),
    ("double_sided_maxwell", (0.0, 1.0)), ("wald", (1.0,)), ("generalized_normal", (2.0,)), ("loggamma", (2.0,)),
    ("triangular", (0.0, 0.5, 1.0)),
])
def test_more_shapes_and_dtypes_as_jax(jax, name, args):
    j = getattr(jax.random, name)(jax.random.key(0), *args, shape=(3, 2))
    u = getattr(ug.random, name)(KEY, *args, shape=(3, 2))
    assert tuple(u.shape) == j.shape == (3, 2) and u.dtype == ug.float32 and str(j.dtype) == "float32"
    assert tuple(getattr(ug.random, name)(KEY, *args).shape) == getattr(jax.random, name)(jax.random.key(0),
                                                                                         *args).shape == ()
    assert getattr(ug.random, name)(KEY, *args, shape=(2,), dtype=ug.float64).dtype == ug.float64
    with pytest.raises(TypeError, match=f"random.{name}.*floating dtype"):
        getattr(ug.random, name)(KEY, *args, shape=(2,), dtype=ug.int32)


def test_parameters_broadcast_against_shape():
    scale = ug.tensor([1.0, 10.0], dtype=ug.float64)
    x = ug.random.rayleigh(KEY, scale, (N, 2), dtype=ug.float64).numpy()
    for j, s in enumerate([1.0, 10.0]):
        assert stats.kstest(x[:, j], stats.rayleigh(scale=s).cdf).statistic < 1.95 / np.sqrt(N)
    assert tuple(ug.random.weibull_min(KEY, ug.ones(3, 1), ug.ones(4)).shape) == (3, 4)
    assert tuple(ug.random.triangular(KEY, 0.0, ug.full((2,), 0.5), 1.0).shape) == (2,)


@pytest.mark.parametrize("call,error,message", [
    (lambda: ug.random.poisson(KEY, -1.0, (3,)), ValueError, r"\[random.poisson\] rates \(lam\) must be finite and >= 0"),
    (lambda: ug.random.poisson(KEY, ug.tensor([1.0, float("nan")])), ValueError, r"\[random.poisson\] rates"),
    (lambda: ug.random.poisson(KEY, ug.ones(3), (2,)), ValueError,
     r"\[random.poisson\] shapes \[3\] and \[2\] cannot be broadcast"),
    (lambda: ug.random.poisson(KEY, ug.ones(3), ()), ValueError,
     r"\[random.poisson\] lam of shape \[3\] does not broadcast to the shape \[\]"),
    (lambda: ug.random.binomial(KEY, 10, 1.5), ValueError, r"\[random.binomial\] p must be in \[0, 1\]"),
    (lambda: ug.random.binomial(KEY, -2, 0.5), ValueError, r"\[random.binomial\] n must be a whole number >= 0"),
    (lambda: ug.random.binomial(KEY, 2.5, 0.5), ValueError, r"\[random.binomial\] n must be a whole number"),
    (lambda: ug.random.binomial(KEY, ug.ones(3), ug.ones(2)), ValueError, r"\[random.binomial\] shapes \[3\] and \[2\]"),
    (lambda: ug.random.geometric(KEY, 0.0), ValueError, r"\[random.geometric\] p must be in \(0, 1\]"),
    (lambda: ug.random.geometric(KEY, 1.2), ValueError, r"\[random.geometric\] p must be in \(0, 1\]"),
    (lambda: ug.random.weibull_min(KEY, -1.0, 1.0), ValueError, r"\[random.weibull_min\] scale must be positive"),
    (lambda: ug.random.pareto(KEY, 0.0), ValueError, r"\[random.pareto\] b must be positive"),
    (lambda: ug.random.wald(KEY, -1.0), ValueError, r"\[random.wald\] mean must be positive"),
    (lambda: ug.random.triangular(KEY, 1.0, 0.0, 2.0), ValueError, r"\[random.triangular\] needs left <= mode <= right"),
    (lambda: ug.random.generalized_normal(KEY, 0.0), ValueError, r"\[random.generalized_normal\] p must be positive"),
    (lambda: ug.random.ball(KEY, 0), ValueError, r"\[random.ball\] d must be positive"),
    (lambda: ug.random.loggamma(KEY, 0.0), ValueError, r"\[random.loggamma\] a must be positive"),
])
def test_bad_parameters_raise_naming_the_op(call, error, message):
    with pytest.raises(error, match=message):
        call()


# torch's spellings, from the global generator.


def test_torch_poisson_and_binomial():
    import torch

    ug.manual_seed(5)
    rates = ug.full((N,), 3.5, dtype=ug.float64)
    x = ug.poisson(rates)
    assert x.dtype == ug.float64 == torch.poisson(torch.full((2,), 3.5, dtype=torch.float64)).dtype
    _check_counts(x.numpy().astype(np.int64), stats.poisson(3.5))
    ug.manual_seed(5)
    np.testing.assert_array_equal(ug.poisson(rates).numpy(), x.numpy())  # the seed fixes the draws
    assert not np.array_equal(ug.poisson(rates).numpy(), x.numpy())  # and each draw advances it
    assert ug.poisson(ug.ones(2, 3)).dtype == ug.float32 and tuple(ug.poisson(ug.ones(2, 3)).shape) == (2, 3)
    b = ug.binomial(ug.full((N,), 40.0), ug.full((N,), 0.3)).numpy()
    assert b.dtype == np.float32
    _check_counts(b.astype(np.int64), stats.binom(40, 0.3))
    with pytest.warns(UserWarning):  # torch resizes its output to the broadcast, and warns
        expected = torch.binomial(torch.full((3, 1), 5.0), torch.full((1, 4), 0.5)).shape
    assert tuple(ug.binomial(ug.full((3, 1), 5.0), ug.full((1, 4), 0.5)).shape) == tuple(expected) == (3, 4)
    with pytest.raises(ValueError, match=r"\[poisson\] rates \(lam\) must be finite and >= 0"):
        ug.poisson(ug.tensor([-1.0]))
    with pytest.raises(TypeError, match=r"\[poisson\] expects a floating tensor"):
        ug.poisson(ug.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"\[poisson\] generator must be a ug.Generator"):
        ug.poisson(rates, generator=object())
    with pytest.raises(ValueError, match=r"\[binomial\] p must be in \[0, 1\]"):
        ug.binomial(ug.ones(2), ug.full((2,), 1.5))
    with pytest.raises(TypeError, match=r"\[binomial\] expects count and prob of one dtype"):
        ug.binomial(ug.ones(2), ug.ones(2, dtype=ug.float64))


def test_torch_in_place_draws():
    import torch

    for name in ("geometric_", "exponential_", "cauchy_", "log_normal_"):
        assert hasattr(torch.Tensor, name) and hasattr(ug.Tensor, name)
    ug.manual_seed(11)
    g = ug.empty(N, dtype=ug.float64).geometric_(0.2)
    _check_counts(g.numpy().astype(np.int64), stats.geom(0.2))
    assert ug.empty(2, 3, dtype=ug.int64).geometric_(0.5).dtype == ug.int64  # torch fills integer tensors too
    c = ug.empty(N, dtype=ug.float64).cauchy_(1.0, 3.0).numpy()
    assert stats.kstest(c, stats.cauchy(1.0, 3.0).cdf).statistic < 1.95 / np.sqrt(N)
    e = ug.empty(N, dtype=ug.float64).exponential_(2.0).numpy()
    assert stats.kstest(e, stats.expon(scale=0.5).cdf).statistic < 1.95 / np.sqrt(N)
    assert np.isfinite(ug.empty(N).exponential_().numpy()).all()
    ln = ug.empty(N, dtype=ug.float64).log_normal_(0.5, 0.25).numpy()
    assert stats.kstest(ln, stats.lognorm(0.25, scale=np.exp(0.5)).cdf).statistic < 1.95 / np.sqrt(N)
    t = ug.zeros(N, dtype=ug.float64)
    t.log_normal_()  # in place, with torch's defaults mean 1 and std 2
    assert stats.kstest(t.numpy(), stats.lognorm(2.0, scale=np.exp(1.0)).cdf).statistic < 1.95 / np.sqrt(N)
    for dtype in (ug.float16, ug.bfloat16, ug.float32, ug.float64):
        assert ug.empty(2, dtype=dtype).cauchy_().dtype == dtype
        assert ug.empty(2, dtype=dtype).log_normal_().dtype == dtype
        assert torch.empty(2, dtype=getattr(torch, str(dtype).split(".")[-1])).exponential_().isfinite().all()
        assert np.isfinite(ug.empty(N, dtype=dtype).exponential_().float().numpy()).all()
    ug.manual_seed(11)
    np.testing.assert_array_equal(ug.empty(N, dtype=ug.float64).geometric_(0.2).numpy(), g.numpy())
    with pytest.raises(ValueError, match=r"\[geometric_\] p must be in \(0, 1\]"):
        ug.empty(2).geometric_(0.0)
    with pytest.raises(TypeError, match=r"\[cauchy_\] expects a floating tensor"):
        ug.empty(2, dtype=ug.int64).cauchy_()
    with pytest.raises(ValueError, match=r"\[cauchy_\] sigma must be positive"):
        ug.empty(2).cauchy_(0.0, -1.0)
    with pytest.raises(ValueError, match=r"\[log_normal_\] std must be positive"):
        ug.empty(2).log_normal_(1.0, 0.0)
