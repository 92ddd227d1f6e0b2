"""The rest of torch.distributions: FisherSnedecor, InverseGamma, GeneralizedPareto,
ContinuousBernoulli and LogisticNormal against torch (GeneralizedPareto against scipy: torch's
raises in float64), torch's remaining KL pairs, register_kl's dispatch, the structured
transforms, constraints, biject_to and transform_to; sample moments, reparameterised gradients,
shapes, expand and the argument checks."""
import warnings

import numpy as np
import pytest
import torch
from scipy import integrate, stats

import unigrad as ug
from reference import Arg, arr, assert_close, check, check_grad

DTYPES = ["float32", "float64"]


def pos(shape, dtype, seed):
    return arr(shape, dtype, 0.5, 2.0, seed)


def call(dist, method, value):
    f = getattr(dist, method)
    return f(value) if method in ("log_prob", "cdf", "icdf") else (f() if callable(f) else f)


def cases(dtype):
    u = np.random.default_rng(9).uniform(0.05, 0.95, (4, 3)).astype(dtype)
    # probs on both sides of 1/2, two of them inside torch's Taylor region (0.499, 0.501]
    cb_probs = Arg(np.array([[0.1, 0.4995, 0.5005], [0.7, 0.95, 0.3]], dtype))
    simplex = np.random.default_rng(4).dirichlet(np.ones(4), (2, 3)).astype(dtype)
    return {
        # df1 on both sides of 2 (the mode is NaN below), df2 of 2 and 4 (the mean and variance)
        "FisherSnedecor": (lambda d, a, b: d.FisherSnedecor(a, b), [arr((4, 1), dtype, 0.5, 6, 1),
                                                                   arr((3,), dtype, 1, 9, 2)],
                           pos((4, 3), dtype, 3), ["log_prob", "mean", "variance", "mode"]),
        # concentrations on both sides of 1 and 2 (the mean and variance are inf below)
        "InverseGamma": (lambda d, c, r: d.InverseGamma(c, r), [arr((4, 1), dtype, 0.5, 4, 1), pos((3,), dtype, 2)],
                         pos((4, 3), dtype, 3), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "mode"]),
        "ContinuousBernoulli(probs)": (lambda d, p: d.ContinuousBernoulli(probs=p), [cb_probs],
                                       Arg(u[:2]), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance",
                                                    "stddev"]),
        "ContinuousBernoulli(logits)": (lambda d, logit: d.ContinuousBernoulli(logits=logit), [arr((2, 3), dtype)],
                                        Arg(u[:2]), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance"]),
        # a batch of (2, 3) vectors of 3 (points of the 4-simplex), loc broadcast against scale
        "LogisticNormal": (lambda d, a, s: d.LogisticNormal(a, s), [arr((3,), dtype), pos((2, 3, 3), dtype, 1)],
                           Arg(simplex), ["log_prob"]),
        "_icdf_values": Arg(u),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [k for k in cases("float32") if not k.startswith("_")])
def test_against_torch(name, dtype):
    table = cases(dtype)
    make, params, value, methods = table[name]
    for method in methods:
        v = table["_icdf_values"] if method == "icdf" else value
        if method == "icdf" and name.startswith("ContinuousBernoulli"):
            v = Arg(v.array[:2])  # its batch is [2, 3]
        check(lambda m, *a: call(make(m.distributions, *a[:-1]), method, a[-1]), *params, v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_generalized_pareto_against_scipy(dtype):
    """torch's GeneralizedPareto raises in float64 (it compares with a float32 zero) and takes
    its cdf as exp(log1p(-exp(log survival))), which loses small values: scipy's genpareto is
    the reference, float64 truth rounded to the dtype."""
    rng = np.random.default_rng(3)
    loc, scale = rng.uniform(-1, 1, (4, 1)), rng.uniform(0.5, 2, (3,))
    c = np.array([-0.4, 0.0, 0.3, 0.7])[:, None]  # bounded support below 0, the exponential at 0
    z = rng.uniform(0.05, 1.2, (4, 3))  # inside [0, -1 / c) for every c here
    q = rng.uniform(0.05, 0.95, (4, 3))
    x = loc + scale * z
    ref = stats.genpareto(c, loc, scale)
    dt = getattr(ug, dtype)
    dist = ug.distributions.GeneralizedPareto(ug.tensor(loc, dtype=dt), ug.tensor(scale, dtype=dt),
                                              ug.tensor(c, dtype=dt))
    xv = ug.tensor(x, dtype=dt)
    expected = {
        "log_prob": (dist.log_prob(xv), ref.logpdf(x)),
        "cdf": (dist.cdf(xv), ref.cdf(x)),
        "icdf": (dist.icdf(ug.tensor(q, dtype=dt)), ref.ppf(q)),
        "entropy": (dist.entropy(), np.broadcast_to(ref.entropy(), (4, 3))),
        "mean": (dist.mean, np.where(c < 1, ref.mean(), np.nan)),
        "variance": (dist.variance, np.where(c < 0.5, ref.var(), np.nan)),
        "mode": (dist.mode, np.broadcast_to(loc, (4, 3))),
    }
    for name, (got, want) in expected.items():
        # parameters rounded to the dtype move the result by a few eps of its condition
        assert_close(got.double().numpy(), np.asarray(want, np.float64), dtype, rtol=30 * np.finfo(dtype).eps,
                     atol=30 * np.finfo(dtype).eps, path=name)
    # a cdf of 1e-13 keeps its digits (torch's formula gives 0 or 1e-13 to one digit)
    tiny = ug.distributions.GeneralizedPareto(0.0, 1.0, ug.tensor(0.3, dtype=ug.float64)).cdf(
        ug.tensor(1e-13, dtype=ug.float64))
    assert_close(tiny.numpy(), stats.genpareto(0.3).cdf(1e-13), "float64")
    assert tuple(dist.support.check(ug.tensor(loc + scale * 2.6)).shape) == (4, 3)
    assert not dist.support.check(ug.tensor(loc + scale * 2.6))[0].any()  # above loc + scale / 0.4


def kl(make):
    return lambda m, *a: m.distributions.kl_divergence(*make(m.distributions, *a))


@pytest.mark.parametrize("dtype", DTYPES)
def test_new_kl_pairs_against_torch(dtype):
    loc, scale, loc2, scale2 = arr((3,), dtype), pos((4, 1), dtype, 1), arr((4, 3), dtype, seed=2), pos((3,), dtype, 3)
    cb = arr((4, 3), dtype, 0.05, 0.95, 4)
    conc, rate = pos((4, 3), dtype, 5), pos((3,), dtype, 6)
    low01, width01 = arr((4, 3), dtype, 0.05, 0.4, 7), arr((3,), dtype, 0.1, 0.5, 8)
    pairs = [
        (lambda d, a, b: (d.ContinuousBernoulli(probs=a), d.ContinuousBernoulli(logits=b)), cb, loc2),
        (lambda d, p, r: (d.Bernoulli(probs=p), d.Poisson(r)), cb, rate),
        (lambda d, a, b, p: (d.Beta(a, b), d.ContinuousBernoulli(probs=p)), conc, rate, cb),
        (lambda d, a, b, r: (d.Beta(a, b), d.Exponential(r)), conc, rate, scale),
        (lambda d, a, b, c, r: (d.Beta(a, b), d.Gamma(c, r)), conc, rate, scale, scale2),
        (lambda d, a, b, c, s: (d.Beta(a, b), d.Normal(c, s)), conc, rate, loc, scale),
        # Uniforms inside [0, 1] and reaching outside: inf there
        (lambda d, a, b, c, w: (d.Beta(a, b), d.Uniform(c - 0.2, c - 0.2 + w + 1)), conc, rate, low01, width01),
        (lambda d, p, r: (d.ContinuousBernoulli(probs=p), d.Exponential(r)), cb, rate),
        (lambda d, p, a, s: (d.ContinuousBernoulli(probs=p), d.Normal(a, s)), cb, loc, scale),
        (lambda d, a, r: (d.Exponential(a), d.Gamma(r, a + 1)), scale, conc),
        (lambda d, r, a, s: (d.Exponential(r), d.Normal(a, s)), scale2, loc, scale),
        (lambda d, c, r, q: (d.Gamma(c, r), d.Exponential(q)), conc, rate, scale),
        (lambda d, c, r, a, s: (d.Gamma(c, r), d.Normal(a, s)), conc, rate, loc, scale),
        (lambda d, a, s, b, t: (d.Laplace(a, s), d.Normal(b, t)), loc, scale, loc2, scale2),
        (lambda d, a, s, b, t: (d.Normal(a, s), d.Laplace(b, t)), loc, scale, loc2, scale2),
        (lambda d, lo, w, a, b: (d.Uniform(lo, lo + w), d.Beta(a, b)), low01, width01, conc, rate),
        (lambda d, lo, w, r: (d.Uniform(lo - 0.2, lo + w), d.Exponential(r)), low01, width01, rate),
        (lambda d, lo, w, c, r: (d.Uniform(lo - 0.2, lo + w), d.Gamma(c, r)), low01, width01, conc, rate),
        (lambda d, lo, w, a, s: (d.Uniform(lo, lo + w), d.Normal(a, s)), low01, width01, loc, scale),
        (lambda d, lo, w, p: (d.Uniform(lo - 0.01, lo + w), d.ContinuousBernoulli(probs=p)), low01, width01, cb),
        # q's count equal to p's, then below it (inf: p has mass above q's count)
        (lambda d, n, p, k, q: (d.Binomial(n, probs=p), d.Binomial(k, logits=q)),
         Arg(np.array([[3.0], [7.0]], dtype)), arr((2, 3), dtype, 0.05, 0.95, 9), Arg(np.array([[3.0], [5.0]], dtype)),
         arr((2, 3), dtype)),
    ]
    for make, *args in pairs:
        check(kl(make), *args)
    # infinite: p has mass outside q's support
    for p, q in [("Exponential", "Uniform"), ("Gamma", "Beta"), ("Laplace", "Gamma"), ("Normal", "Exponential"),
                 ("Normal", "ContinuousBernoulli"), ("Gumbel", "ContinuousBernoulli"), ("Poisson", "Bernoulli"),
                 ("Poisson", "Binomial"), ("Pareto", "ContinuousBernoulli"), ("ContinuousBernoulli", "Pareto")]:
        check(lambda m, a: m.distributions.kl_divergence(make_dist(m, p, a), make_dist(m, q, a)), pos((3,), dtype, 1))


def make_dist(m, name, a):
    d = m.distributions
    one = a / a
    return {
        "Exponential": lambda: d.Exponential(a), "Gamma": lambda: d.Gamma(a, one), "Beta": lambda: d.Beta(a, one),
        "Uniform": lambda: d.Uniform(0 * a, a), "Laplace": lambda: d.Laplace(a, one), "Normal": lambda: d.Normal(a, one),
        "ContinuousBernoulli": lambda: d.ContinuousBernoulli(probs=a / 3), "Gumbel": lambda: d.Gumbel(a, one),
        "Poisson": lambda: d.Poisson(a), "Bernoulli": lambda: d.Bernoulli(probs=a / 3),
        "Binomial": lambda: d.Binomial(3, probs=a / 3), "Pareto": lambda: d.Pareto(a, one),
    }[name]()


@pytest.mark.parametrize("dtype", DTYPES)
def test_kl_of_transformed_and_wishart_against_torch(dtype):
    """Two TransformedDistributions through equal transforms: the KL of their bases (equal
    transforms: the same class, parameters equal); Wishart pairs (torch's ExponentialFamily
    fallback, a Bregman divergence by autograd; closed form here)."""
    loc, scale, loc2, scale2 = arr((3,), dtype), pos((4, 1), dtype, 1), arr((4, 3), dtype, seed=2), pos((3,), dtype, 3)
    check(kl(lambda d, a, b, c, e: (d.LogNormal(a, b), d.LogNormal(c, e))), loc, scale, loc2, scale2)
    check(kl(lambda d, a, b, c, e: (d.InverseGamma(b, a.exp()), d.InverseGamma(e, c.exp()))), loc, scale, loc2, scale2)
    check(kl(lambda d, a, b, c, e: (d.LogisticNormal(a, b), d.LogisticNormal(c, e))), loc, scale, loc2, scale2)

    def affine(d, a, b, c, e, shift):
        t = d.transforms
        return (d.TransformedDistribution(d.Normal(a, b), [t.AffineTransform(1.0, 2.0), t.ExpTransform()]),
                d.TransformedDistribution(d.Normal(c, e), [t.AffineTransform(1.0 + shift, 2.0), t.ExpTransform()]))

    check(kl(lambda d, *a: affine(d, *a, 0.0)), loc, scale, loc2, scale2)
    check(kl(lambda d, *a: affine(d, *a, 0.5)), loc, scale, loc2, scale2)  # NotImplementedError in both
    # unbatched: torch's fallback sums its df term over the last two batch dims (see below)
    check(kl(lambda d, a, b, c, e: (d.Wishart(a, covariance_matrix=b), d.Wishart(c, scale_tril=e))),
          arr((), dtype, 2.5, 7, 1), spd((), 3, dtype, 2), arr((), dtype, 2.5, 7, 3),
          Arg(np.linalg.cholesky(spd((), 3, dtype, 4).array).astype(dtype)))


def test_batched_wishart_kl_against_monte_carlo():
    """torch's ExponentialFamily KL sums the df natural parameter's term over event_shape's
    two dims, which a batched Wishart's df does not have: it mixes the batch (negative values).
    E_p[log p - log q] over draws of p, within 6 standard errors."""
    d = ug.distributions
    vp, vq = spd((), 3, "float64", 2).array, spd((), 3, "float64", 4).array
    p = d.Wishart(ug.tensor([4.0, 5.0], dtype=ug.float64), ug.tensor(vp))
    q = d.Wishart(ug.tensor([6.5, 3.0], dtype=ug.float64), ug.tensor(vq))
    n = 40000
    ug.manual_seed(6)
    x = p.sample((n,))
    diff = (p.log_prob(x) - q.log_prob(x)).numpy()
    got = d.kl_divergence(p, q).numpy()
    assert np.all(np.abs(diff.mean(0) - got) <= 6 * diff.std(0) / np.sqrt(n)), (diff.mean(0), got)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tp = torch.distributions.Wishart(torch.tensor([4.0, 5.0], dtype=torch.float64), torch.tensor(vp))
        tq = torch.distributions.Wishart(torch.tensor([6.5, 3.0], dtype=torch.float64), torch.tensor(vq))
        assert (torch.distributions.kl_divergence(tp, tq) < 0).any()


def test_binomial_kl_with_a_larger_q_count_is_not_implemented():
    d = ug.distributions
    with pytest.raises(NotImplementedError, match="total_count"):
        d.kl_divergence(d.Binomial(2, probs=ug.tensor([0.5])), d.Binomial(3, probs=ug.tensor([0.5])))


def kl_by_quadrature(p_logpdf, q_logpdf, low, high):
    return integrate.quad(lambda x: np.exp(p_logpdf(x)) * (p_logpdf(x) - q_logpdf(x)), low, high, epsabs=1e-13,
                          epsrel=1e-12, limit=200)[0]


def cb_logpdf(p):
    norm = 2 * np.arctanh(1 - 2 * p) / (1 - 2 * p)  # C(p)
    return lambda x: np.log(norm) + x * np.log(p) + (1 - x) * np.log1p(-p)


def test_continuous_bernoulli_and_the_unit_uniform_against_quadrature():
    """torch returns inf for KL(ContinuousBernoulli || Uniform(0, 1)) and KL(Uniform(0, w) ||
    ContinuousBernoulli) (it tests q.low >= 0 where q.low > 0 is meant): both are finite, as
    numerical integration says."""
    d = ug.distributions
    p = np.array([0.2, 0.45, 0.8])
    got = d.kl_divergence(d.ContinuousBernoulli(probs=ug.tensor(p, dtype=ug.float64)),
                          d.Uniform(ug.zeros(3, dtype=ug.float64), 1.0)).numpy()
    want = [kl_by_quadrature(cb_logpdf(pi), lambda x: 0.0 * x, 0, 1) for pi in p]
    assert_close(got, np.array(want), "float64", rtol=1e-9)
    assert torch.isinf(torch.distributions.kl_divergence(torch.distributions.ContinuousBernoulli(torch.tensor(0.2)),
                                                         torch.distributions.Uniform(0.0, 1.0)))
    got = d.kl_divergence(d.Uniform(ug.zeros(3, dtype=ug.float64), 0.5),
                          d.ContinuousBernoulli(probs=ug.tensor(p, dtype=ug.float64))).numpy()
    want = [kl_by_quadrature(lambda x: np.log(2.0) + 0 * x, cb_logpdf(pi), 0, 0.5) for pi in p]
    assert_close(got, np.array(want), "float64", rtol=1e-9)
    # strictly outside [0, 1] it is inf
    assert np.isinf(d.kl_divergence(d.Uniform(-0.1, 0.5), d.ContinuousBernoulli(probs=ug.tensor(0.3))).item())


def test_kl_pairs_cover_torchs_registry():
    """Every pair torch registers has a closed form here too, but torch's ExponentialFamily
    fallback (a Bregman divergence by autograd), whose one use without a pair of its own,
    Wishart with Wishart, has a closed form here."""
    from torch.distributions.kl import _KL_REGISTRY

    ours = set(ug._C._distributions._kl_pairs())
    theirs = {(p.__name__, q.__name__) for p, q in _KL_REGISTRY}
    assert theirs - ours == {("ExponentialFamily", "ExponentialFamily")}


def test_register_kl_dispatches_to_the_most_specific_pair():
    d = ug.distributions

    class MyNormal(d.Normal):
        pass

    class MyLaplace(d.Laplace):
        pass

    p, q = d.Normal(0.0, 1.0), d.Normal(1.0, 2.0)
    builtin = d.kl_divergence(p, q).item()
    try:
        @d.register_kl(d.Distribution, d.Distribution)
        def fallback(p, q):
            return ug.tensor(-1.0)

        assert d.kl_divergence(p, q).item() == builtin  # the built-in pair is more specific
        assert d.kl_divergence(d.Cauchy(0.0, 1.0), d.Poisson(1.0)).item() == -1.0  # no built-in pair

        @d.register_kl(MyNormal, d.Normal)
        def mine(p, q):
            return ug.tensor(7.0)

        assert d.kl_divergence(MyNormal(0.0, 1.0), q).item() == 7.0
        assert d.kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0)).item() == 7.0  # subclasses of q too
        assert d.kl_divergence(q, MyNormal(0.0, 1.0)).item() == d.kl_divergence(q, p).item()  # p is no MyNormal

        @d.register_kl(d.Normal, d.Laplace)  # replaces the built-in pair
        def replaced(p, q):
            return ug.tensor(3.0)

        assert d.kl_divergence(p, MyLaplace(0.0, 1.0)).item() == 3.0

        @d.register_kl(d.Normal, MyNormal)
        def other(p, q):
            return ug.tensor(5.0)

        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):  # (MyNormal, Normal) vs (Normal, MyNormal)
            d.kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0))
    finally:
        from unigrad.distributions import kl as kl_module

        kl_module._REGISTRY.clear()
        kl_module._REGISTRY.update(kl_module._BUILTIN)
        kl_module._lookup.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert d.kl_divergence(p, q).item() == builtin
    with pytest.raises(NotImplementedError, match="Cauchy.*Poisson"):
        d.kl_divergence(d.Cauchy(0.0, 1.0), d.Poisson(1.0))
    with pytest.raises(TypeError):
        d.register_kl(int, d.Normal)


# ---- transforms ------------------------------------------------------------------------------

def transforms(m, dtype):
    t = m.distributions.transforms
    d = m.distributions
    e = m.tensor(np.array([0.5, 2.0, 1.5], dtype))
    return {
        "Independent": (t.IndependentTransform(t.ExpTransform(), 2), (4, 3)),
        "Independent(Power)": (t.IndependentTransform(t.PowerTransform(e), 1), (4, 3)),
        "Reshape": (t.ReshapeTransform((4, 3), (2, 6)), (5, 4, 3)),
        "Cat": (t.CatTransform([t.ExpTransform(), t.AffineTransform(1.0, -2.0), t.SigmoidTransform()], 1, [1, 2, 1]),
                (3, 4)),
        # parts over vectors, sliced along a batch dim (their terms concatenated) and along
        # the event dim (their terms added)
        "Cat(vectors)": (t.CatTransform([t.IndependentTransform(t.SigmoidTransform(), 1),
                                         t.IndependentTransform(t.ExpTransform(), 1)], 0, [2, 1]), (3, 4)),
        "Cat(event dim)": (t.CatTransform([t.IndependentTransform(t.SigmoidTransform(), 1),
                                           t.IndependentTransform(t.ExpTransform(), 1)], -1, [1, 3]), (3, 4)),
        "Stack": (t.StackTransform([t.ExpTransform(), t.TanhTransform(), t.SoftplusTransform()], 1), (4, 3)),
        "LowerCholesky": (t.LowerCholeskyTransform(), (2, 3, 3)),
        "PositiveDefinite": (t.PositiveDefiniteTransform(), (2, 3, 3)),
        "CorrCholesky": (t.CorrCholeskyTransform(), (4, 6)),
        "CorrCholesky(2)": (t.CorrCholeskyTransform(), (5, 1)),
        "CumulativeDistribution": (t.CumulativeDistributionTransform(d.Normal(m.tensor(np.array([0.5], dtype)),
                                                                              m.tensor(np.array([2.0], dtype)))),
                                   (4, 3)),
    }


NO_JACOBIAN = {"LowerCholesky", "PositiveDefinite"}
POSITIVE = {"Independent(Power)"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(transforms(torch, "float32")))
def test_transform_against_torch(name, dtype):
    shape = transforms(torch, dtype)[name][1]
    x = arr(shape, dtype, 0.2, 3, 1) if name in POSITIVE else arr(shape, dtype, -1.5, 1.5, 1)

    def results(m, x):
        t = transforms(m, dtype)[name][0]
        y = t(x)
        out = [y, t.inv(y), repr(t.domain), repr(t.codomain), t.domain.event_dim, t.codomain.event_dim, t.bijective,
               t.codomain.check(y)]
        if name not in NO_JACOBIAN:
            out.append(t.log_abs_det_jacobian(x, y))
        if not name.startswith("Cat") and name != "Stack":
            out += [tuple(t.forward_shape(shape)), tuple(t.inverse_shape(tuple(y.shape)))]
        return out

    # sums of at most 4 terms (3 x 3 products, rows of the corr factor): the dtype's tolerance
    check(results, x)


@pytest.mark.parametrize("name", ["Independent(Power)", "Cat(vectors)", "Stack", "CorrCholesky", "PositiveDefinite",
                                  "CumulativeDistribution"])
def test_transform_gradients_against_torch(name):
    shape = transforms(torch, "float64")[name][1]
    x = arr(shape, "float64", 0.2, 3, 1) if name in POSITIVE else arr(shape, "float64", -1.5, 1.5, 1)

    def f(m, x):
        t = transforms(m, "float64")[name][0]
        y = t(x)
        return y if name in NO_JACOBIAN else (y, t.log_abs_det_jacobian(x, y))

    check_grad(f, x)


def test_transform_errors_as_torch():
    def bad(m):
        t = m.distributions.transforms
        return {
            "reshape sizes": lambda: t.ReshapeTransform((2, 3), (5,)),
            "reshape shape": lambda: t.ReshapeTransform((2, 3), (6,)).forward_shape((3, 2)),
            "corr size": lambda: t.CorrCholeskyTransform().forward_shape((4,)),
            "corr square": lambda: t.CorrCholeskyTransform().inverse_shape((3, 4)),
            "lower cholesky jacobian": lambda: t.LowerCholeskyTransform().log_abs_det_jacobian(m.eye(2), m.eye(2)),
        }

    for name, fn in bad(torch).items():
        with pytest.raises(Exception) as torch_err:
            fn()
        with pytest.raises(type(torch_err.value)):
            bad(ug)[name]()


def constraints_of(m, dtype):
    c = m.distributions.constraints
    lb = m.tensor(np.array([0.5, -1.0, 2.0], dtype))
    return {
        "real": (c.real, (4, 3)), "positive": (c.positive, (4, 3)), "nonnegative": (c.nonnegative, (4, 3)),
        "unit_interval": (c.unit_interval, (4, 3)), "greater_than": (c.greater_than(lb), (4, 3)),
        "greater_than_eq": (c.greater_than_eq(lb), (4, 3)), "less_than": (c.less_than(lb), (4, 3)),
        "interval": (c.interval(lb, lb + 2), (4, 3)), "simplex": (c.simplex, (4, 3)),
        "real_vector": (c.real_vector, (4, 3)), "independent": (c.independent(c.positive, 2), (4, 3)),
        "corr_cholesky": (c.corr_cholesky, (4, 6)), "lower_cholesky": (c.lower_cholesky, (2, 3, 3)),
        "positive_definite": (c.positive_definite, (2, 3, 3)),
        "cat": (c.cat([c.positive, c.real, c.unit_interval], 1, [1, 1, 1]), (4, 3)),
        "stack": (c.stack([c.positive, c.real, c.less_than(lb[0])], 1), (4, 3)),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", list(constraints_of(torch, "float32")))
def test_biject_to_and_transform_to_against_torch(name, which, dtype):
    """The map's values, inverse and log |det J| as torch's, its values in the set (torch's
    biject_to(positive) is Exp through Affine(0, 1); here it is ExpTransform: the same values)."""
    shape = constraints_of(torch, dtype)[name][1]
    x = arr(shape, dtype, -1.5, 1.5, 2)

    def results(m, x):
        c = constraints_of(m, dtype)[name][0]
        t = getattr(m.distributions, which)(c)
        y = t(x)
        out = [y, c.check(y), t.domain.event_dim, t.codomain.event_dim]
        if t.bijective:
            out += [t.inv(y), t.log_abs_det_jacobian(x, y)]
        return out

    check(results, x)


# ---- sampling ---------------------------------------------------------------------------------

def moment_cases():
    d = ug.distributions
    return {
        "FisherSnedecor": d.FisherSnedecor(ug.tensor([3.0, 12.0]), ug.tensor([12.0, 20.0])),  # df2 > 8: finite 4th
        "InverseGamma": d.InverseGamma(ug.tensor([5.0, 9.0]), ug.tensor([2.0, 0.5])),  # c > 4: finite 4th moments
        "GeneralizedPareto": d.GeneralizedPareto(ug.tensor([1.0, -1.0, 0.0]), ug.tensor([0.5, 2.0, 1.0]),
                                                 ug.tensor([-0.5, 0.0, 0.2])),
        "ContinuousBernoulli": d.ContinuousBernoulli(probs=ug.tensor([0.1, 0.5, 0.9])),
    }


@pytest.mark.parametrize("name", list(moment_cases()))
def test_sample_moments(name):
    """Sample mean and variance within 6 standard errors of the analytic ones (fixed seed)."""
    dist = moment_cases()[name]
    n = 40000
    ug.manual_seed(1)
    x = dist.sample((n,)).double().numpy()
    assert dist.support.check(ug.tensor(x)).all()
    mean, var = dist.mean.double().numpy(), dist.variance.double().numpy()
    assert np.all(np.abs(x.mean(0) - mean) <= 6 * np.sqrt(var / n)), (x.mean(0), mean)
    sq = (x - mean) ** 2
    assert np.all(np.abs(sq.mean(0) - var) <= 6 * np.sqrt(sq.var(0) / n)), (sq.mean(0), var)


def test_logistic_normal_draws_are_normal_through_stick_breaking():
    loc, scale = ug.tensor([0.5, -1.0, 2.0]), ug.tensor([1.0, 0.5, 2.0])
    dist = ug.distributions.LogisticNormal(loc, scale)
    n = 40000
    ug.manual_seed(2)
    y = dist.sample((n,))
    assert tuple(y.shape) == (n, 4) and ug.distributions.constraints.simplex.check(y).all()
    x = ug.distributions.StickBreakingTransform().inv(y).double().numpy()
    assert np.all(np.abs(x.mean(0) - loc.numpy()) <= 6 * scale.numpy() / np.sqrt(n))
    assert np.all(np.abs(x.var(0) - scale.numpy() ** 2) <= 6 * np.sqrt(2 / n) * scale.numpy() ** 2)


def test_fisher_snedecor_rsample_gradient_of_the_mean():
    """d/d df2 E[X] = d/d df2 df2 / (df2 - 2) = -2 / (df2 - 2)^2, by rsample within 6 standard errors."""
    n, df2 = 40000, np.array([5.0, 9.0, 20.0])
    p = ug.tensor(np.tile(df2, (n, 1)), dtype=ug.float64, requires_grad=True)
    ug.manual_seed(0)
    ug.distributions.FisherSnedecor(4.0, p).rsample().sum().backward()
    per_draw = p.grad.numpy()
    estimate, se = per_draw.mean(0), per_draw.std(0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(estimate + 2 / (df2 - 2) ** 2) <= 6 * se), (estimate, se)


def test_log_prob_gradients_against_torch():
    d64 = "float64"
    value = Arg(np.random.default_rng(5).uniform(0.2, 0.9, (4, 3)))
    cases = [
        (lambda d, a, b, v: d.FisherSnedecor(a, b).log_prob(v), [pos((4, 3), d64, 1), pos((3,), d64, 2)]),
        (lambda d, a, b, v: d.InverseGamma(a, b).log_prob(v), [pos((4, 3), d64, 1), pos((3,), d64, 2)]),
        (lambda d, p, v: d.ContinuousBernoulli(probs=p).log_prob(v), [arr((4, 3), d64, 0.05, 0.95, 3)]),
        (lambda d, a, s, v: d.LogisticNormal(a, s).log_prob(v / v.sum(-1, keepdim=True)),
         [arr((2,), d64), pos((4, 2), d64, 1)]),
    ]
    for fn, params in cases:
        check_grad(lambda m, *p: fn(m.distributions, *p, value.make(m)), *params)


@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 3)])
def test_sample_shapes_match_torch(sample_shape):
    def both(m):
        d = m.distributions
        loc, scale = m.zeros(4, 1), m.ones(3)
        dists = [d.FisherSnedecor(loc + 3, scale), d.InverseGamma(loc + 2, scale),
                 d.ContinuousBernoulli(probs=scale / 3 + loc), d.ContinuousBernoulli(logits=m.zeros(2, 4)),
                 d.LogisticNormal(loc + m.zeros(3), scale), d.LogisticNormal(0.0, 1.0),
                 d.GeneralizedPareto(loc, scale, 0.5 * scale)]
        out = []
        for x in dists:
            out += [tuple(x.sample(sample_shape).shape), tuple(x.batch_shape), tuple(x.event_shape), x.has_rsample,
                    tuple(x.rsample(sample_shape).shape)]
        return out

    assert both(ug) == both(torch)


def test_expand_against_torch():
    def expanded(m, loc, scale):
        d = m.distributions
        dists = [d.FisherSnedecor(scale + 4, scale + 4), d.InverseGamma(scale + 2, scale),
                 d.ContinuousBernoulli(probs=scale / 3), d.ContinuousBernoulli(logits=loc),
                 d.LogisticNormal(loc, scale)]
        out = []
        for x in dists:
            e = x.expand((2, *x.batch_shape))
            out += [type(e).__name__, tuple(e.batch_shape), tuple(e.event_shape)]
            if not isinstance(e, d.LogisticNormal):
                out.append(e.mean)
        return out

    def values(m, loc, scale):
        return tuple(v for v in expanded(m, loc, scale) if not isinstance(v, (str, tuple)))

    loc, scale = arr((3,), "float64"), pos((3,), "float64", 1)
    meta = [[v for v in expanded(m, loc.make(m), scale.make(m)) if isinstance(v, (str, tuple))] for m in (ug, torch)]
    assert meta[0] == meta[1]
    check(values, loc, scale)
    g = ug.distributions.GeneralizedPareto(ug.zeros(3), 1.0, 0.2).expand((2, 3))
    assert type(g).__name__ == "GeneralizedPareto" and g.batch_shape == (2, 3)


BAD = {
    "FisherSnedecor df1 0": lambda d, m: d.FisherSnedecor(m.tensor([0.0]), 1.0),
    "FisherSnedecor value negative": lambda d, m: d.FisherSnedecor(1.0, 2.0).log_prob(m.tensor([-1.0])),
    "InverseGamma rate negative": lambda d, m: d.InverseGamma(1.0, m.tensor([-1.0])),
    "InverseGamma value 0": lambda d, m: d.InverseGamma(1.0, 1.0).log_prob(m.tensor([0.0])),
    "ContinuousBernoulli probs and logits": lambda d, m: d.ContinuousBernoulli(m.tensor([0.5]), m.tensor([0.0])),
    "ContinuousBernoulli value above 1": lambda d, m: d.ContinuousBernoulli(m.tensor([0.3])).log_prob(m.tensor(1.5)),
    "LogisticNormal scale 0": lambda d, m: d.LogisticNormal(m.zeros(2), m.tensor([1.0, 0.0])),
    "LogisticNormal off the simplex": lambda d, m: d.LogisticNormal(m.zeros(2), 1.0).log_prob(m.tensor([0.5, 0.5, 0.5])),
    "GeneralizedPareto scale negative": lambda d, m: d.GeneralizedPareto(0.0, m.tensor([-1.0]), 0.1),
}


@pytest.mark.parametrize("name", list(BAD))
def test_invalid_arguments_raise_as_torch(name):
    with pytest.raises(ValueError):
        BAD[name](torch.distributions, torch)
    with pytest.raises(ValueError):
        BAD[name](ug.distributions, ug)


def test_checks_torch_misses():
    """torch checks ContinuousBernoulli's probs only when validate_args is passed (then clamps
    1.5 to 1 - eps) and GeneralizedPareto's values not at all past a negative concentration's
    bound: both raise here."""
    d = ug.distributions
    assert torch.distributions.ContinuousBernoulli(probs=torch.tensor([1.5])).probs.item() < 1
    with pytest.raises(ValueError, match="probs"):
        d.ContinuousBernoulli(probs=ug.tensor([1.5]))
    with pytest.raises(ValueError, match="support"):
        d.GeneralizedPareto(0.0, 1.0, ug.tensor(-0.5)).log_prob(ug.tensor(3.0))  # above loc - scale / c = 2
    assert np.isfinite(d.GeneralizedPareto(0.0, 1.0, ug.tensor(-0.5)).log_prob(ug.tensor(1.5)).item())


# ---- distributions over matrices ---------------------------------------------------------------

def spd(batch, k, dtype, seed):
    a = np.random.default_rng(seed).uniform(-1, 1, (*batch, k, k))
    return Arg((a @ np.swapaxes(a, -1, -2) + k * np.eye(k)).astype(dtype))


def corr_cholesky(n, d, seed):
    """Cholesky factors of random correlation matrices [n, d, d]."""
    a = np.random.default_rng(seed).normal(size=(n, d, d + 2))
    c = a @ np.swapaxes(a, -1, -2)
    s = 1 / np.sqrt(np.diagonal(c, axis1=-2, axis2=-1))
    return np.linalg.cholesky(c * s[..., None] * s[..., None, :])


@pytest.mark.parametrize("dtype", DTYPES)
def test_lkj_cholesky_against_torch(dtype):
    value = Arg(corr_cholesky(2, 4, 1)[:, None].astype(dtype))  # [2, 1, 4, 4] against a batch of 3
    check(lambda m, c, v: m.distributions.LKJCholesky(4, c).log_prob(v), arr((3,), dtype, 0.3, 4, 2), value)
    check(lambda m, v: m.distributions.LKJCholesky(2, m.tensor(1.5, dtype=v.dtype)).log_prob(v),
          Arg(corr_cholesky(5, 2, 3).astype(dtype)))


def test_lkj_cholesky_density_integrates_to_one():
    """Over the free entries (L21, L31, L32) of a 3 x 3 factor, the density integrates to 1
    (Monte Carlo over the box [-1, 1]^3, 6 standard errors)."""
    rng = np.random.default_rng(0)
    n = 400000
    z = rng.uniform(-1, 1, (n, 3))
    inside = (z[:, 1] ** 2 + z[:, 2] ** 2 < 1) & (np.abs(z[:, 0]) < 1)
    z = z[inside]
    L = np.zeros((len(z), 3, 3))
    L[:, 0, 0] = 1
    L[:, 1, 0], L[:, 1, 1] = z[:, 0], np.sqrt(1 - z[:, 0] ** 2)
    L[:, 2, 0], L[:, 2, 1], L[:, 2, 2] = z[:, 1], z[:, 2], np.sqrt(1 - z[:, 1] ** 2 - z[:, 2] ** 2)
    for eta in [0.7, 1.0, 2.5]:
        p = ug.distributions.LKJCholesky(3, ug.tensor(eta, dtype=ug.float64)).log_prob(ug.tensor(L)).exp().numpy()
        values = np.zeros(n)
        values[inside] = p * 8
        assert abs(values.mean() - 1) <= 6 * values.std() / np.sqrt(n), (eta, values.mean())


def test_lkj_cholesky_sample_correlations():
    """Off-diagonal correlations of LKJ(eta) in dimension d have mean 0 and variance
    1 / (2 eta + d - 1); draws are Cholesky factors of correlation matrices. torch's draws
    fail this past the first row (its Beta(i - 1/2, ...) for the onion's Beta(i / 2, ...))."""
    d, eta, n = 4, ug.tensor([0.5, 1.0, 4.0]), 20000
    ug.manual_seed(3)
    L = ug.distributions.LKJCholesky(d, eta).sample((n,))
    assert tuple(L.shape) == (n, 3, d, d) and ug.distributions.constraints.corr_cholesky.check(L).all()
    c = (L @ L.mT).double().numpy()
    r = c[..., np.tril_indices(d, -1)[0], np.tril_indices(d, -1)[1]]  # [n, 3, 6]
    var = 1 / (2 * eta.numpy()[:, None] + d - 1)
    assert np.all(np.abs(r.mean(0)) <= 6 * np.sqrt(var / n))
    sq = r ** 2
    assert np.all(np.abs(sq.mean(0) - var) <= 6 * np.sqrt(sq.var(0) / n))
    torch.manual_seed(3)
    Lt = torch.distributions.LKJCholesky(d, torch.tensor(1.0)).sample((n,))
    rt = (Lt @ Lt.mT).double().numpy()[:, 3, 2]
    assert abs((rt ** 2).mean() - 0.2) > 6 * np.sqrt((rt ** 2).var() / n)


def wishart(m, df, matrix, which):
    return m.distributions.Wishart(df, **{which: matrix})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_against_torch(which, dtype):
    # df on both sides of dim + 1 (the mode is NaN below), matrices broadcast against df's batch
    df = arr((2, 1), dtype, 2.5, 7, 1)
    matrix = spd((3,), 3, dtype, 2)
    if which == "scale_tril":
        matrix = Arg(np.linalg.cholesky(matrix.array).astype(dtype))
    value = spd((2, 3), 3, dtype, 3)
    for method in ["log_prob", "entropy", "mean", "mode", "variance", "covariance_matrix", "precision_matrix",
                   "scale_tril"]:
        check(lambda m, a, s, v: call(wishart(m, a, s, which), method, v), df, matrix, value)


def test_wishart_sample_moments_and_reparameterisation():
    """Sample mean df V and variance df (V_ij^2 + V_ii V_jj) within 6 standard errors, every draw
    positive-definite without a warning (torch's first check is inverted: it warns of, and
    redraws, every draw); d/d df E[X] = V by rsample."""
    V = spd((), 3, "float64", 5).array
    df, n = np.array([2.5, 8.0]), 20000
    dist = ug.distributions.Wishart(ug.tensor(df), covariance_matrix=ug.tensor(V))
    ug.manual_seed(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = dist.sample((n,))
    assert ug.distributions.constraints.positive_definite.check(x).all()
    x = x.numpy()
    mean, var = dist.mean.numpy(), dist.variance.numpy()
    assert np.all(np.abs(x.mean(0) - mean) <= 6 * np.sqrt(var / n))
    sq = (x - mean) ** 2
    assert np.all(np.abs(sq.mean(0) - var) <= 6 * np.sqrt(sq.var(0) / n))
    with pytest.warns(UserWarning, match="Singular sample"):
        torch.distributions.Wishart(torch.tensor(8.0), torch.eye(3)).sample()

    p = ug.tensor(np.tile(df, (n, 1)), requires_grad=True)
    ug.manual_seed(5)
    ug.distributions.Wishart(p, covariance_matrix=ug.tensor(V)).rsample()[..., 0, 1].sum().backward()
    per_draw = p.grad.numpy()
    estimate, se = per_draw.mean(0), per_draw.std(0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(estimate - V[0, 1]) <= 6 * se), (estimate, V[0, 1], se)


def test_matrix_distributions_shapes_expand_and_checks_as_torch():
    def meta(m):
        d = m.distributions
        dists = [d.LKJCholesky(3, m.ones(2) * 2), d.LKJCholesky(2),
                 d.Wishart(m.tensor([3.0, 4.0]), covariance_matrix=m.eye(3)), d.Wishart(5.0, scale_tril=2 * m.eye(2))]
        out = []
        for x in dists:
            e = x.expand((4, *x.batch_shape))
            out += [tuple(x.sample((5,)).shape), tuple(x.batch_shape), tuple(x.event_shape), x.has_rsample,
                    type(e).__name__, tuple(e.batch_shape), tuple(e.sample().shape), repr(x.support)]
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's Wishart warns of every draw
        assert meta(ug) == meta(torch)
    bad = {
        "LKJ dim 1": lambda d, m: d.LKJCholesky(1),
        "LKJ concentration 0": lambda d, m: d.LKJCholesky(3, m.tensor([0.0])),
        "LKJ value not a corr factor": lambda d, m: d.LKJCholesky(2).log_prob(2 * m.eye(2)),
        "Wishart df too small": lambda d, m: d.Wishart(m.tensor([1.5]), covariance_matrix=m.eye(3)),
        "Wishart two matrices": lambda d, m: d.Wishart(4.0, covariance_matrix=m.eye(2), scale_tril=m.eye(2)),
        "Wishart not positive-definite": lambda d, m: d.Wishart(4.0, precision_matrix=-m.eye(2)),
        "Wishart value not positive-definite": lambda d, m: d.Wishart(4.0, m.eye(2)).log_prob(-m.eye(2)),
    }
    for name, fn in bad.items():
        with pytest.raises((ValueError, AssertionError)):  # torch asserts the one-matrix rule
            fn(torch.distributions, torch)
        with pytest.raises(ValueError):
            fn(ug.distributions, ug)


@pytest.mark.parametrize("name", ["FisherSnedecor", "ContinuousBernoulli", "LogisticNormal", "LKJCholesky", "Wishart"])
def test_log_probs_under_vmap_and_jit(name):
    d = ug.distributions
    makers = {  # jit reads no value: the argument checks are off
        "FisherSnedecor": lambda: d.FisherSnedecor(ug.full((3,), 3.0), 5.0, validate_args=False),
        "ContinuousBernoulli": lambda: d.ContinuousBernoulli(probs=ug.tensor([0.2, 0.5, 0.9]), validate_args=False),
        "LogisticNormal": lambda: d.LogisticNormal(ug.zeros(2), ug.ones(2), validate_args=False),
        "LKJCholesky": lambda: d.LKJCholesky(3, ug.tensor(2.0), validate_args=False),
        "Wishart": lambda: d.Wishart(ug.tensor(4.0), ug.eye(3), validate_args=False),
    }
    values = {  # each row of v made into a value in the support
        "FisherSnedecor": lambda v: v.exp(), "ContinuousBernoulli": lambda v: v.sigmoid(),
        "LogisticNormal": lambda v: v.softmax(-1),
        "LKJCholesky": lambda v: d.CorrCholeskyTransform()(v),
        "Wishart": lambda v: d.PositiveDefiniteTransform()(ug.diag_embed(v)),
    }

    def f(v):
        return makers[name]().log_prob(values[name](v))

    x = ug.tensor(np.random.default_rng(4).uniform(-1, 1, (5, 3)).astype(np.float32))
    looped = np.stack([f(v).numpy() for v in x])
    assert_close(ug.vmap(f)(x).numpy(), looped)
    assert_close(ug.jit(f)(x[0]).numpy(), looped[0])
