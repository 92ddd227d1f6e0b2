"""ug.distributions against torch.distributions: log_prob, cdf/icdf, entropy, moments and KL on
random parameters in float32 and float64; gradients of log_prob against torch's; rsample as
its reparameterisation (the noise redrawn from the same seed); sample moments, shapes and the
argument checks."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, assert_close, check, check_grad

DTYPES = ["float32", "float64"]


def pos(shape, dtype, seed):
    """Positive parameters (scales, rates) in [0.5, 2]."""
    return arr(shape, dtype, 0.5, 2.0, seed)


def spd(batch, k, dtype, seed):
    """Well-conditioned symmetric positive-definite matrices [*batch, k, k]."""
    a = np.random.default_rng(seed).uniform(-1, 1, (*batch, k, k))
    return Arg((a @ np.swapaxes(a, -1, -2) + k * np.eye(k)).astype(dtype))


def tril(batch, k, dtype, seed):
    """Lower-triangular factors with a positive diagonal in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    a = np.tril(rng.uniform(-1, 1, (*batch, k, k)), -1) + np.eye(k) * rng.uniform(0.5, 2, (*batch, k, 1))
    return Arg(a.astype(dtype))


def probs(shape, dtype, seed):
    return arr(shape, dtype, 0.05, 0.95, seed)


# name: (constructor from the module and parameters, parameters, a value in the support, methods)
def cases(dtype):
    ALL = ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev", "mode"]
    u = np.random.default_rng(9).uniform(0.05, 0.95, (4, 3)).astype(dtype)
    return {
        "Normal": (lambda m, a, b: m.distributions.Normal(a, b), [arr((3,), dtype), pos((4, 1), dtype, 1)],
                   arr((2, 4, 3), dtype, seed=2), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev", "mode"]),
        "Uniform": (lambda m, a, b: m.distributions.Uniform(a, a + b), [arr((4, 3), dtype), pos((3,), dtype, 1)],
                    None, ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev", "mode"]),
        "Exponential": (lambda m, r: m.distributions.Exponential(r), [pos((4, 3), dtype, 1)], arr((4, 3), dtype, 0, 3, 2),
                        ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev", "mode"]),
        "Laplace": (lambda m, a, b: m.distributions.Laplace(a, b), [arr((4, 3), dtype), pos((3,), dtype, 1)],
                    arr((4, 3), dtype, seed=2), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev", "mode"]),
        "Bernoulli(probs)": (lambda m, p: m.distributions.Bernoulli(probs=p), [probs((4, 3), dtype, 1)],
                             Arg((np.arange(12).reshape(4, 3) % 2).astype(dtype)), ["log_prob", "entropy", "mean", "variance", "mode"]),
        "Bernoulli(logits)": (lambda m, logit: m.distributions.Bernoulli(logits=logit), [arr((4, 3), dtype)],
                              Arg((np.arange(12).reshape(4, 3) % 3 == 0).astype(dtype)),
                              ["log_prob", "entropy", "mean", "variance"]),
        "Categorical(probs)": (lambda m, p: m.distributions.Categorical(probs=p), [probs((4, 5), dtype, 1)],
                               Arg(np.array([[0, 4, 2, 1]] * 2)), ["log_prob", "entropy", "mean", "variance", "mode"]),
        "Categorical(logits)": (lambda m, logit: m.distributions.Categorical(logits=logit), [arr((4, 5), dtype)],
                                Arg(np.array([3, 0, 4, 1])), ["log_prob", "entropy"]),
        "MultivariateNormal(cov)": (lambda m, a, c: m.distributions.MultivariateNormal(a, covariance_matrix=c),
                                    [arr((2, 3), dtype), spd((), 3, dtype, 1)], arr((5, 2, 3), dtype, seed=2),
                                    ["log_prob", "entropy", "mean", "variance"]),
        "MultivariateNormal(scale_tril)": (lambda m, a, s: m.distributions.MultivariateNormal(a, scale_tril=s),
                                           [arr((3,), dtype), tril((2,), 3, dtype, 1)], arr((2, 3), dtype, seed=2),
                                           ["log_prob", "entropy", "mean", "variance"]),
        # rank 2 over 4 dims, loc and cov_diag broadcast against a batch of factors
        "LowRankMultivariateNormal": (lambda m, a, w, dg: m.distributions.LowRankMultivariateNormal(a, w, dg),
                                      [arr((4,), dtype), arr((3, 4, 2), dtype, -1, 1, 1), pos((4,), dtype, 3)],
                                      arr((5, 3, 4), dtype, seed=2), ["log_prob", "entropy", "mean", "variance", "mode"]),
        "MixtureSameFamily": (lambda m, w, a, b: m.distributions.MixtureSameFamily(
            m.distributions.Categorical(logits=w), m.distributions.Normal(a, b)),
            [arr((3,), dtype), arr((4, 3), dtype), pos((4, 3), dtype, 1)], arr((2, 4), dtype, seed=2),
            ["log_prob", "cdf", "mean", "variance"]),
        "MixtureSameFamily(MultivariateNormal)": (lambda m, w, a, s: m.distributions.MixtureSameFamily(
            m.distributions.Categorical(probs=w), m.distributions.MultivariateNormal(a, scale_tril=s)),
            [probs((2, 3), dtype, 1), arr((2, 3, 4), dtype), tril((3,), 4, dtype, 3)], arr((5, 2, 4), dtype, seed=2),
            ["log_prob", "mean", "variance"]),
        "Independent": (lambda m, a, b: m.distributions.Independent(m.distributions.Normal(a, b), 1),
                        [arr((4, 3), dtype), pos((4, 3), dtype, 1)], arr((4, 3), dtype, seed=2),
                        ["log_prob", "entropy", "mean", "variance", "mode"]),
        "Gamma": (lambda m, c, r: m.distributions.Gamma(c, r), [pos((4, 3), dtype, 1), pos((3,), dtype, 3)],
                  pos((4, 3), dtype, 2), ["log_prob", "entropy", "mean", "variance", "mode"]),
        "Chi2": (lambda m, df: m.distributions.Chi2(df), [arr((4, 3), dtype, 0.5, 6, 1)], pos((4, 3), dtype, 2),
                 ["log_prob", "entropy", "mean", "variance", "mode"]),
        "Beta": (lambda m, a, b: m.distributions.Beta(a, b), [arr((3,), dtype, 0.3, 3, 1), pos((4, 3), dtype, 3)],
                 Arg(u), ["log_prob", "entropy", "mean", "variance", "mode"]),
        "Dirichlet": (lambda m, c: m.distributions.Dirichlet(c), [arr((4, 3), dtype, 0.3, 3, 1)],
                      Arg((u / u.sum(-1, keepdims=True)).astype(dtype)),
                      ["log_prob", "entropy", "mean", "variance", "mode"]),
        "StudentT": (lambda m, df, a, b: m.distributions.StudentT(df, a, b),
                     [arr((4, 1), dtype, 0.5, 5, 1), arr((3,), dtype), pos((4, 3), dtype, 3)], arr((4, 3), dtype, seed=2),
                     ["log_prob", "entropy", "mean", "variance", "mode"]),
        "LogNormal": (lambda m, a, b: m.distributions.LogNormal(a, b), [arr((3,), dtype, -1, 1), pos((4, 1), dtype, 1)],
                      pos((4, 3), dtype, 2), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "mode"]),
        "TransformedDistribution": (
            lambda m, a, b, c: m.distributions.TransformedDistribution(
                m.distributions.Normal(a, b), [m.distributions.transforms.AffineTransform(c, -2.0),
                                               m.distributions.transforms.SigmoidTransform()]),
            [arr((3,), dtype), pos((4, 1), dtype, 1), arr((3,), dtype, seed=3)], Arg(u), ["log_prob", "cdf", "icdf"]),
        "Binomial(probs)": (lambda m, n, p: m.distributions.Binomial(n, probs=p),
                            [Arg(np.array([[3.0], [10.0]], dtype)), probs((2, 3), dtype, 1)],
                            Arg(np.array([[0, 1, 3], [10, 4, 7]], dtype)), ["log_prob", "mean", "variance", "mode"]),
        "Binomial(logits)": (lambda m, p: m.distributions.Binomial(12, logits=p), [arr((2, 3), dtype, -8, 8, 1)],
                             Arg(np.array([[0, 5, 12], [12, 4, 7]], dtype)), ["log_prob", "mean", "variance", "mode"]),
        "Multinomial": (lambda m, p: m.distributions.Multinomial(6, probs=p), [probs((2, 4), dtype, 1)],
                        Arg(np.array([[0, 1, 3, 2], [6, 0, 0, 0]], dtype)), ["log_prob", "mean", "variance"]),
        "Poisson": (lambda m, r: m.distributions.Poisson(r), [arr((4, 3), dtype, 0.5, 6, 1)],
                    Arg(np.arange(12).reshape(4, 3).astype(dtype) % 7), ["log_prob", "mean", "variance", "mode"]),
        "OneHotCategorical": (lambda m, logit: m.distributions.OneHotCategorical(logits=logit), [arr((4, 3), dtype)],
                              Arg(np.eye(3, dtype=dtype)[[0, 2, 1, 1]]), ["log_prob", "entropy", "mean", "variance", "mode"]),
        "Cauchy": (lambda m, a, b: m.distributions.Cauchy(a, b), [arr((3,), dtype), pos((4, 1), dtype, 1)],
                   arr((2, 4, 3), dtype, seed=2), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "mode"]),
        "HalfCauchy": (lambda m, s: m.distributions.HalfCauchy(s), [pos((4, 3), dtype, 1)], arr((4, 3), dtype, 0, 3, 2),
                       ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "mode"]),
        "HalfNormal": (lambda m, s: m.distributions.HalfNormal(s), [pos((3,), dtype, 1)], arr((4, 3), dtype, 0, 3, 2),
                       ALL),
        "Gumbel": (lambda m, a, b: m.distributions.Gumbel(a, b), [arr((4, 3), dtype), pos((3,), dtype, 1)],
                   arr((4, 3), dtype, seed=2), ALL),
        # concentrations on both sides of 1: the mode is NaN below
        "Weibull": (lambda m, s, k: m.distributions.Weibull(s, k), [pos((3,), dtype, 1), arr((4, 3), dtype, 0.5, 3, 3)],
                    pos((4, 3), dtype, 2), ALL),
        # alphas on both sides of 1 and 2: the mean and variance are inf below
        "Pareto": (lambda m, s, a: m.distributions.Pareto(s, a), [pos((3,), dtype, 1), arr((4, 1), dtype, 0.5, 4, 3)],
                   arr((4, 3), dtype, 2, 5, 2), ALL),
        "Kumaraswamy": (lambda m, a, b: m.distributions.Kumaraswamy(a, b), [arr((4, 3), dtype, 0.5, 3, 1),
                                                                            arr((3,), dtype, 0.5, 3, 3)],
                        Arg(u), ["log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev"]),
        # concentrations on both sides of 3.75, where the Bessel approximation switches
        "VonMises": (lambda m, a, k: m.distributions.VonMises(a, k), [arr((3,), dtype), arr((4, 1), dtype, 0.1, 8, 1)],
                     arr((4, 3), dtype, seed=2), ["log_prob", "mean", "variance", "mode"]),
        "Geometric(probs)": (lambda m, p: m.distributions.Geometric(probs=p), [probs((4, 3), dtype, 1)],
                             Arg(np.arange(12).reshape(4, 3).astype(dtype) % 5),
                             ["log_prob", "entropy", "mean", "variance", "stddev", "mode"]),
        "Geometric(logits)": (lambda m, logit: m.distributions.Geometric(logits=logit), [arr((4, 3), dtype)],
                              Arg(np.arange(12).reshape(4, 3).astype(dtype) % 4),
                              ["log_prob", "entropy", "mean", "variance", "mode"]),
        # total counts below and above 1 (the mode's floor at 0) and real-valued
        "NegativeBinomial(probs)": (lambda m, n, p: m.distributions.NegativeBinomial(n, probs=p),
                                    [Arg(np.array([[0.5], [3.0], [7.5]], dtype)), probs((3,), dtype, 1)],
                                    Arg(np.array([[0, 1, 3], [10, 4, 7], [2, 0, 20]], dtype)),
                                    ["log_prob", "mean", "variance", "stddev", "mode"]),
        "NegativeBinomial(logits)": (lambda m, p: m.distributions.NegativeBinomial(4.0, logits=p),
                                     [arr((2, 3), dtype, -4, 2, 1)], Arg(np.array([[0, 5, 12], [30, 4, 7]], dtype)),
                                     ["log_prob", "mean", "variance", "mode"]),
        "RelaxedBernoulli(probs)": (lambda m, t, p: m.distributions.RelaxedBernoulli(t, probs=p),
                                    [arr((), dtype, 0.3, 2, 5), probs((4, 3), dtype, 1)], Arg(u), ["log_prob"]),
        "RelaxedBernoulli(logits)": (lambda m, t, logit: m.distributions.RelaxedBernoulli(t, logits=logit),
                                     [arr((3,), dtype, 0.3, 2, 5), arr((4, 3), dtype)], Arg(u), ["log_prob"]),
        "LogitRelaxedBernoulli": (lambda m, t, logit: m.distributions.LogitRelaxedBernoulli(t, logits=logit)
                                  if m is ug else m.distributions.relaxed_bernoulli.LogitRelaxedBernoulli(t, logits=logit),
                                  [arr((), dtype, 0.3, 2, 5), arr((4, 3), dtype)], arr((2, 4, 3), dtype, seed=2),
                                  ["log_prob"]),
        "RelaxedOneHotCategorical(probs)": (lambda m, t, p: m.distributions.RelaxedOneHotCategorical(t, probs=p),
                                            [arr((), dtype, 0.3, 2, 5), probs((4, 3), dtype, 1)],
                                            Arg((u / u.sum(-1, keepdims=True)).astype(dtype)), ["log_prob"]),
        "RelaxedOneHotCategorical(logits)": (lambda m, t, logit: m.distributions.RelaxedOneHotCategorical(t, logits=logit),
                                             [arr((4, 1), dtype, 0.3, 2, 5), arr((4, 3), dtype)],
                                             Arg((u / u.sum(-1, keepdims=True)).astype(dtype)), ["log_prob"]),
        "ExpRelaxedCategorical": (lambda m, t, logit: m.distributions.ExpRelaxedCategorical(t, logits=logit)
                                  if m is ug else m.distributions.relaxed_categorical.ExpRelaxedCategorical(t, logits=logit),
                                  [arr((), dtype, 0.3, 2, 5), arr((4, 3), dtype)],
                                  Arg(np.log(u / u.sum(-1, keepdims=True)).astype(dtype)), ["log_prob"]),
        "OneHotCategoricalStraightThrough": (lambda m, p: m.distributions.OneHotCategoricalStraightThrough(probs=p),
                                             [probs((4, 3), dtype, 1)], Arg(np.eye(3, dtype=dtype)[[0, 2, 1, 1]]),
                                             ["log_prob", "entropy", "mean", "variance", "mode"]),
        "_icdf_values": Arg(u),
    }


def call(dist, method, value):
    f = getattr(dist, method)
    return f(value) if method in ("log_prob", "cdf", "icdf") else (f() if callable(f) else f)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [k for k in cases("float32") if not k.startswith("_")])
def test_against_torch(name, dtype):
    table = cases(dtype)
    make, params, value, methods = table[name]
    if value is None:  # inside [low, low + width): low + u * width
        low, width = params[0].array, params[1].array
        value = Arg((low + table["_icdf_values"].array * width).astype(dtype))
    for method in methods:
        v = table["_icdf_values"] if method == "icdf" else value
        check(lambda m, *a: call(make(m, *a[:-1]), method, a[-1]), *params, v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kl_divergence_against_torch(dtype):
    def kl(make):
        return lambda m, *a: m.distributions.kl_divergence(*make(m.distributions, *a))

    check(kl(lambda d, a, b, c, e: (d.Normal(a, b), d.Normal(c, e))), arr((3,), dtype), pos((4, 1), dtype, 1),
          arr((4, 3), dtype, seed=2), pos((3,), dtype, 3))
    check(kl(lambda d, p, q: (d.Bernoulli(probs=p), d.Bernoulli(logits=q))), probs((4, 3), dtype, 1), arr((4, 3), dtype))
    check(kl(lambda d, p, q: (d.Categorical(probs=p), d.Categorical(logits=q))), probs((4, 6), dtype, 1),
          arr((6,), dtype))
    check(kl(lambda d, a, b, c, e: (d.Uniform(a, a + b), d.Uniform(c, c + e))), arr((5,), dtype, 0, 1),
          pos((5,), dtype, 1), arr((5,), dtype, -0.5, 1.5, 2), arr((5,), dtype, 0.5, 3, 3))
    check(kl(lambda d, a, s, c, e: (d.MultivariateNormal(a, scale_tril=s), d.MultivariateNormal(c, covariance_matrix=e))),
          arr((2, 3), dtype), tril((2,), 3, dtype, 1), arr((3,), dtype, seed=2), spd((), 3, dtype, 3))
    check(kl(lambda d, p, q: (d.OneHotCategorical(probs=p), d.OneHotCategorical(logits=q))), probs((4, 6), dtype, 1),
          arr((6,), dtype))
    check(kl(lambda d, a, b: (d.Exponential(a), d.Exponential(b))), pos((4, 3), dtype, 1), pos((3,), dtype, 2))
    check(kl(lambda d, a, b, c, e: (d.Laplace(a, b), d.Laplace(c, e))), arr((3,), dtype), pos((4, 1), dtype, 1),
          arr((4, 3), dtype, seed=2), pos((3,), dtype, 3))
    check(kl(lambda d, a, b, c, e: (d.Gamma(a, b), d.Gamma(c, e))), pos((3,), dtype, 1), pos((4, 1), dtype, 2),
          pos((4, 3), dtype, 3), pos((3,), dtype, 4))
    check(kl(lambda d, a, b: (d.Poisson(a), d.Poisson(b))), pos((4, 3), dtype, 1), pos((3,), dtype, 2))
    check(kl(lambda d, a, b, c, e: (d.Beta(a, b), d.Beta(c, e))), pos((3,), dtype, 1), pos((4, 1), dtype, 2),
          pos((4, 3), dtype, 3), pos((3,), dtype, 4))
    check(kl(lambda d, a, b: (d.Dirichlet(a), d.Dirichlet(b))), pos((4, 3), dtype, 1), pos((3,), dtype, 2))
    check(kl(lambda d, a, b: (d.Chi2(a), d.Chi2(b))), pos((4, 3), dtype, 1), pos((3,), dtype, 2))
    check(kl(lambda d, a, b, c, e: (d.Independent(d.Normal(a, b), 2), d.Independent(d.Normal(c, e), 2))),
          arr((2, 3), dtype), pos((2, 3), dtype, 1), arr((2, 3), dtype, seed=2), pos((2, 3), dtype, 3))
    check(kl(lambda d, a, b, c, e: (d.Cauchy(a, b), d.Cauchy(c, e))), arr((3,), dtype), pos((4, 1), dtype, 1),
          arr((4, 3), dtype, seed=2), pos((3,), dtype, 3))
    check(kl(lambda d, a, b: (d.HalfNormal(a), d.HalfNormal(b))), pos((4, 3), dtype, 1), pos((3,), dtype, 2))
    check(kl(lambda d, a, b, c, e: (d.Gumbel(a, b), d.Gumbel(c, e))), arr((3,), dtype), pos((4, 1), dtype, 1),
          arr((4, 3), dtype, seed=2), pos((3,), dtype, 3))
    # scales on both sides of each other: inf where p's support reaches below q's
    check(kl(lambda d, a, b, c, e: (d.Pareto(a, b), d.Pareto(c, e))), pos((3,), dtype, 1), pos((4, 1), dtype, 2),
          pos((4, 3), dtype, 3), pos((3,), dtype, 4))
    check(kl(lambda d, p, q: (d.Geometric(probs=p), d.Geometric(logits=q))), probs((4, 3), dtype, 1), arr((3,), dtype))
    check(kl(lambda d, a, w, dg, b, v, e: (d.LowRankMultivariateNormal(a, w, dg), d.LowRankMultivariateNormal(b, v, e))),
          arr((2, 4), dtype), arr((4, 2), dtype, -1, 1, 1), pos((4,), dtype, 2), arr((4,), dtype, seed=3),
          arr((2, 4, 3), dtype, -1, 1, 4), pos((2, 4), dtype, 5))


@pytest.mark.parametrize("dtype", DTYPES)
def test_kl_divergence_of_two_families_against_torch(dtype):
    def kl(make):
        return lambda m, *a: m.distributions.kl_divergence(*make(m.distributions, *a))

    loc, scale, loc2, scale2 = arr((3,), dtype), pos((4, 1), dtype, 1), arr((4, 3), dtype, seed=2), pos((3,), dtype, 3)
    check(kl(lambda d, a, b: (d.Exponential(a), d.Gumbel(b, a + 1))), pos((4, 3), dtype, 1), arr((3,), dtype))
    check(kl(lambda d, c, r, a, b: (d.Gamma(c, r), d.Gumbel(a, b))), pos((4, 3), dtype, 1), pos((3,), dtype, 2), loc, scale)
    check(kl(lambda d, a, b, c, e: (d.Gumbel(a, b), d.Normal(c, e))), loc, scale, loc2, scale2)
    check(kl(lambda d, a, b, c, e: (d.Normal(a, b), d.Gumbel(c, e))), loc, scale, loc2, scale2)
    check(kl(lambda d, a, b, c, e: (d.Uniform(a, a + b), d.Gumbel(c, e))), loc, scale, loc2, scale2)
    # alphas on both sides of 1 and 2: inf where p's mean or variance is
    alpha = arr((4, 1), dtype, 0.5, 4, 4)
    check(kl(lambda d, s, a, r: (d.Pareto(s, a), d.Exponential(r))), pos((3,), dtype, 1), alpha, pos((3,), dtype, 2))
    check(kl(lambda d, s, a, c, r: (d.Pareto(s, a), d.Gamma(c, r))), pos((3,), dtype, 1), alpha, pos((3,), dtype, 2),
          pos((4, 3), dtype, 3))
    check(kl(lambda d, s, a, c, e: (d.Pareto(s, a), d.Normal(c, e))), pos((3,), dtype, 1), alpha, loc2, scale2)
    # lows on both sides of the scale: inf where p reaches below it
    check(kl(lambda d, a, b, s, e: (d.Uniform(a, a + b), d.Pareto(s, e))), arr((4, 3), dtype, 0.5, 2, 5), scale,
          pos((3,), dtype, 1), pos((3,), dtype, 3))
    check(kl(lambda d, a, b, s, e: (d.Normal(a, b), d.Pareto(s, e))), loc, scale, pos((3,), dtype, 1), scale2)
    check(kl(lambda d, a, b, c, e: (d.Gumbel(a, b), d.Beta(c, e))), loc, scale, pos((3,), dtype, 1), scale2)
    check(kl(lambda d, a, b, c, e: (d.Pareto(a, b), d.Uniform(c, c + e))), pos((3,), dtype, 1), scale, loc2, scale2)
    check(kl(lambda d, a, s, b, w, e: (d.MultivariateNormal(a, scale_tril=s), d.LowRankMultivariateNormal(b, w, e))),
          arr((2, 4), dtype), tril((2,), 4, dtype, 1), arr((4,), dtype, seed=3), arr((4, 2), dtype, -1, 1, 4),
          pos((4,), dtype, 5))
    check(kl(lambda d, b, w, e, a, c: (d.LowRankMultivariateNormal(b, w, e), d.MultivariateNormal(a, covariance_matrix=c))),
          arr((4,), dtype, seed=3), arr((2, 4, 2), dtype, -1, 1, 4), pos((4,), dtype, 5), arr((4,), dtype), spd((), 4, dtype, 1))


def test_kl_divergence_of_other_pairs_is_not_implemented():
    d = ug.distributions
    with pytest.raises(NotImplementedError, match="Normal.*Cauchy"):
        d.kl_divergence(d.Normal(0.0, 1.0), d.Cauchy(0.0, 1.0))
    with pytest.raises(NotImplementedError):
        d.kl_divergence(d.Independent(d.Normal(ug.zeros(2, 3), 1.0), 1), d.Independent(d.Normal(ug.zeros(2, 3), 1.0), 2))
    with pytest.raises(ValueError, match="event shapes"):
        d.kl_divergence(d.MultivariateNormal(ug.zeros(2), ug.eye(2)), d.MultivariateNormal(ug.zeros(3), ug.eye(3)))


GRAD_CASES = {
    "Normal": (lambda d, a, b, v: d.Normal(a, b).log_prob(v), [arr((4, 3), "float64"), pos((3,), "float64", 1)]),
    "Laplace": (lambda d, a, b, v: d.Laplace(a, b).log_prob(v), [arr((4, 3), "float64"), pos((3,), "float64", 1)]),
    "Exponential": (lambda d, r, v: d.Exponential(r).log_prob(v.abs()), [pos((4, 3), "float64", 1)]),
    "Uniform.cdf": (lambda d, a, b, v: d.Uniform(a - 4, b + 3).cdf(v), [arr((4, 3), "float64"), pos((3,), "float64", 1)]),
    "Bernoulli": (lambda d, logit, v: d.Bernoulli(logits=logit).log_prob((v > 0).to(logit.dtype)),
                  [arr((4, 3), "float64")]),
    "Categorical": (lambda d, logit, v: d.Categorical(logits=logit).log_prob((v[:, 0].abs() * 1.3).long()),
                    [arr((4, 4), "float64")]),
    "Gamma": (lambda d, c, r, v: d.Gamma(c, r).log_prob(v.abs() + 0.1), [pos((4, 3), "float64", 1), pos((3,), "float64", 2)]),
    "Beta": (lambda d, a, b, v: d.Beta(a, b).log_prob((v.abs() + 0.1) / 2.2), [pos((4, 3), "float64", 1),
                                                                                 pos((3,), "float64", 2)]),
    "Cauchy": (lambda d, a, b, v: d.Cauchy(a, b).log_prob(v), [arr((4, 3), "float64"), pos((3,), "float64", 1)]),
    "HalfNormal": (lambda d, s, v: d.HalfNormal(s).log_prob(v.abs()), [pos((4, 3), "float64", 1)]),
    "Gumbel": (lambda d, a, b, v: d.Gumbel(a, b).log_prob(v), [arr((4, 3), "float64"), pos((3,), "float64", 1)]),
    "Weibull": (lambda d, s, k, v: d.Weibull(s, k).log_prob(v.abs() + 0.1), [pos((4, 3), "float64", 1),
                                                                             pos((3,), "float64", 2)]),
    "Pareto": (lambda d, s, a, v: d.Pareto(s, a).log_prob(v.abs() + 2.1), [pos((4, 3), "float64", 1),
                                                                          pos((3,), "float64", 2)]),
    "Kumaraswamy": (lambda d, a, b, v: d.Kumaraswamy(a, b).log_prob((v.abs() + 0.1) / 2.2),
                    [pos((4, 3), "float64", 1), pos((3,), "float64", 2)]),
    "VonMises": (lambda d, a, k, v: d.VonMises(a, k).log_prob(v), [arr((4, 3), "float64"), arr((3,), "float64", 0.5, 6, 1)]),
    "Geometric": (lambda d, logit, v: d.Geometric(logits=logit).log_prob((v.abs() * 2).floor()), [arr((4, 3), "float64")]),
    "NegativeBinomial": (lambda d, n, logit, v: d.NegativeBinomial(n, logits=logit).log_prob((v.abs() * 3).floor()),
                         [pos((4, 3), "float64", 1), arr((3,), "float64", seed=2)]),
    "MixtureSameFamily": (lambda d, w, a, b, v: d.MixtureSameFamily(d.Categorical(logits=w), d.Normal(a, b)).log_prob(
        v[:, :1]), [arr((3,), "float64"), arr((4, 3), "float64", seed=1), pos((3,), "float64", 2)]),
    "LowRankMultivariateNormal": (lambda d, a, w, dg, v: d.LowRankMultivariateNormal(a, w, dg.abs() + 0.5).log_prob(v),
                                  [arr((3,), "float64"), arr((4, 3, 2), "float64", -1, 1, 1), arr((3,), "float64", seed=2)]),
    "MultivariateNormal": (lambda d, a, s, v: d.MultivariateNormal(a, scale_tril=s.tril(-1) + s.diagonal().abs().diag_embed()
                                                                    + ug_or_torch_eye(s)).log_prob(v),
                           [arr((3,), "float64"), arr((3, 3), "float64", seed=1)]),
}


def ug_or_torch_eye(s):
    return (torch if isinstance(s, torch.Tensor) else ug).eye(3, dtype=s.dtype)


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_log_prob_gradients_against_torch(name):
    fn, params = GRAD_CASES[name]
    value = Arg(np.random.default_rng(5).uniform(-2, 2, (4, 4) if name == "Categorical" else (4, 3)))
    # The value is an input of fixed data: close over it so that only the parameters are differentiated.
    check_grad(lambda m, *p: fn(m.distributions, *p, value.make(m)), *params)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rsample_is_the_reparameterisation(dtype):
    d = ug.distributions
    dt = getattr(ug, dtype)
    loc = ug.tensor([0.5, -1.0, 2.0], dtype=dt, requires_grad=True)
    scale = ug.tensor([[1.5], [0.25]], dtype=dt, requires_grad=True)
    ug.manual_seed(7)
    x = d.Normal(loc, scale).rsample((5,))
    ug.manual_seed(7)
    eps = ug.randn(5, 2, 3, dtype=dt)
    assert_close(x.detach().numpy(), (loc.detach() + eps * scale.detach()).numpy())
    x.sum().backward()
    assert_close(loc.grad.numpy(), np.full(3, 10.0))
    assert_close(scale.grad.numpy(), eps.sum((0, 2)).numpy().reshape(2, 1), terms=np.full((2, 1), 15.0) * 4, n=15)

    low, width = ug.tensor([-1.0, 0.0], dtype=dt), ug.tensor([2.0, 0.5], dtype=dt, requires_grad=True)
    ug.manual_seed(3)
    y = d.Uniform(low, low + width).rsample((4,))
    ug.manual_seed(3)
    u = ug.rand(4, 2, dtype=dt)
    assert_close(y.detach().numpy(), (low + u * width.detach()).numpy())
    y.sum().backward()
    assert_close(width.grad.numpy(), u.sum(0).numpy())

    L = ug.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=dt)
    mu = ug.tensor([1.0, -2.0], dtype=dt, requires_grad=True)
    ug.manual_seed(11)
    z = d.MultivariateNormal(mu, scale_tril=L).rsample((6,))
    ug.manual_seed(11)
    e = ug.randn(6, 2, dtype=dt)
    assert_close(z.detach().numpy(), (mu.detach() + e @ L.T).numpy())
    z.sum().backward()
    assert_close(mu.grad.numpy(), np.full(2, 6.0))


# name: (distribution, its analytic mean and variance come from the distribution itself)
def moment_cases():
    d = ug.distributions
    return {
        "Normal": d.Normal(ug.tensor([0.5, -2.0]), ug.tensor([1.0, 3.0])),
        "Uniform": d.Uniform(ug.tensor([-1.0, 2.0]), ug.tensor([1.0, 2.5])),
        "Exponential": d.Exponential(ug.tensor([0.5, 4.0])),
        "Laplace": d.Laplace(ug.tensor([1.0, 0.0]), ug.tensor([0.5, 2.0])),
        "Bernoulli": d.Bernoulli(logits=ug.tensor([-1.0, 2.0])),
        "MultivariateNormal": d.MultivariateNormal(ug.tensor([1.0, -1.0]), ug.tensor([[2.0, 0.5], [0.5, 1.0]])),
        "Gamma": d.Gamma(ug.tensor([0.5, 3.0]), ug.tensor([2.0, 0.5])),
        "Beta": d.Beta(ug.tensor([0.5, 3.0]), ug.tensor([2.0, 0.5])),
        "Poisson": d.Poisson(ug.tensor([0.5, 20.0])),
        "Chi2": d.Chi2(ug.tensor([0.5, 7.0])),
        "Dirichlet": d.Dirichlet(ug.tensor([0.3, 2.0, 5.0])),
        "StudentT": d.StudentT(ug.tensor([5.0, 30.0]), ug.tensor([1.0, -1.0]), ug.tensor([0.5, 2.0])),
        "LogNormal": d.LogNormal(ug.tensor([0.0, 1.0]), ug.tensor([0.25, 0.5])),
        "Binomial": d.Binomial(ug.tensor([5.0, 100.0]), probs=ug.tensor([0.3, 0.9])),
        "Multinomial": d.Multinomial(7, probs=ug.tensor([0.2, 0.5, 0.3])),
        "OneHotCategorical": d.OneHotCategorical(probs=ug.tensor([0.2, 0.5, 0.3])),
        "LowRankMultivariateNormal": d.LowRankMultivariateNormal(ug.tensor([1.0, -1.0, 0.0]),
                                                                 ug.tensor([[1.0], [0.5], [-2.0]]),
                                                                 ug.tensor([0.5, 1.0, 2.0])),
        "MixtureSameFamily": d.MixtureSameFamily(d.Categorical(probs=ug.tensor([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]])),
                                                 d.Normal(ug.tensor([[-2.0, 0.0, 3.0], [1.0, 0.0, -1.0]]),
                                                          ug.tensor([0.5, 1.0, 2.0]))),
        "HalfNormal": d.HalfNormal(ug.tensor([0.5, 3.0])),
        "Gumbel": d.Gumbel(ug.tensor([1.0, -2.0]), ug.tensor([0.5, 2.0])),
        "Weibull": d.Weibull(ug.tensor([1.0, 3.0]), ug.tensor([0.7, 4.0])),
        "Pareto": d.Pareto(ug.tensor([1.0, 0.5]), ug.tensor([5.0, 9.0])),  # alpha > 4: finite fourth moments
        "Kumaraswamy": d.Kumaraswamy(ug.tensor([0.5, 3.0]), ug.tensor([2.0, 0.7])),
        "Geometric": d.Geometric(probs=ug.tensor([0.05, 0.5, 1.0])),
        "NegativeBinomial": d.NegativeBinomial(ug.tensor([0.5, 4.0, 30.0]), logits=ug.tensor([1.0, -1.0, 0.0])),
    }


@pytest.mark.parametrize("name", list(moment_cases()))
def test_sample_moments(name):
    """Sample mean and variance within 6 standard errors of the analytic ones (fixed seed)."""
    dist = moment_cases()[name]
    n = 40000
    ug.manual_seed(1)
    x = dist.sample((n,)).double().numpy()
    mean, var = dist.mean.double().numpy(), dist.variance.double().numpy()
    assert np.all(np.abs(x.mean(0) - mean) <= 6 * np.sqrt(var / n)), (x.mean(0), mean)
    # The squared deviations from the analytic mean average to var with standard error
    # sqrt((E(x - mean)^4 - var^2) / n) (0 for a fair Bernoulli, whose squared deviations are constant).
    sq = (x - mean) ** 2
    assert np.all(np.abs(sq.mean(0) - var) <= 6 * np.sqrt(sq.var(0) / n) + 1e-6 * var), (sq.mean(0), var)


def test_categorical_sample_frequencies():
    p = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    ug.manual_seed(2)
    x = ug.distributions.Categorical(probs=ug.tensor(p)).sample((20000,)).numpy()
    freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
    assert np.all(np.abs(freq - p) <= 6 * np.sqrt(p * (1 - p) / 20000))


def test_sampling_follows_the_global_seed():
    dist = ug.distributions.Normal(ug.zeros(3), 1.0)
    ug.manual_seed(5)
    a = dist.sample((4,))
    ug.manual_seed(5)
    b = dist.sample((4,))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not dist.sample((4,)).requires_grad


@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 3)])
def test_sample_shapes_match_torch(sample_shape):
    def both(m):
        d = m.distributions
        loc, scale = m.zeros(4, 1), m.ones(3)
        dists = [d.Normal(loc, scale), d.Uniform(loc, loc + scale), d.Laplace(loc, scale), d.Exponential(scale),
                 d.Bernoulli(probs=m.ones(4, 3) / 2), d.Categorical(logits=m.zeros(4, 3)),
                 d.MultivariateNormal(m.zeros(4, 3), scale_tril=m.eye(3)), d.Independent(d.Normal(loc, scale), 2),
                 d.Poisson(scale), d.OneHotCategorical(probs=m.ones(4, 3) / 3), d.Gamma(loc + 1, scale),
                 d.Beta(scale, loc + 1), d.Chi2(loc + 1), d.Dirichlet(m.ones(4, 3)), d.StudentT(scale, loc, scale),
                 d.LogNormal(loc, scale), d.Binomial(m.full((4, 1), 5.0), probs=m.ones(3) / 2),
                 d.Multinomial(5, probs=m.ones(4, 3) / 3), d.Cauchy(loc, scale), d.HalfCauchy(scale),
                 d.HalfNormal(loc + 1), d.Gumbel(loc, scale), d.Weibull(scale, loc + 1), d.Pareto(scale, loc + 1),
                 d.Kumaraswamy(scale, loc + 1), d.VonMises(loc, scale),
                 d.Geometric(probs=scale / 2), d.NegativeBinomial(loc + 2, logits=scale),
                 d.LowRankMultivariateNormal(m.zeros(4, 3), m.ones(3, 2), scale),
                 d.MixtureSameFamily(d.Categorical(logits=m.zeros(4, 3)), d.Normal(loc + m.zeros(3), scale)),
                 d.MixtureSameFamily(d.Categorical(logits=m.zeros(3)),
                                     d.Independent(d.Normal(m.zeros(3, 2), m.ones(3, 2)), 1)),
                 d.RelaxedBernoulli(m.tensor(0.5), probs=m.ones(4, 3) / 2),
                 d.RelaxedOneHotCategorical(m.tensor(2.0), logits=m.zeros(4, 3)),
                 d.OneHotCategoricalStraightThrough(probs=m.ones(4, 3) / 3),
                 d.TransformedDistribution(d.Normal(loc, scale), [d.transforms.AffineTransform(m.zeros(2, 1, 1), 2.0)])]
        out = []
        for x in dists:
            out += [tuple(x.sample(sample_shape).shape), tuple(x.batch_shape), tuple(x.event_shape), x.has_rsample]
            if x.has_rsample:
                out.append(tuple(x.rsample(sample_shape).shape))
        return out

    assert both(ug) == both(torch)


BAD = {
    "negative scale": lambda d, m: d.Normal(0.0, m.tensor([1.0, -1.0])),
    "NaN loc": lambda d, m: d.Laplace(m.tensor([float("nan")]), 1.0),
    "low >= high": lambda d, m: d.Uniform(m.tensor([0.0, 1.0]), m.tensor([1.0, 1.0])),
    "rate 0": lambda d, m: d.Exponential(m.tensor([0.0])),
    "value outside the support": lambda d, m: d.Exponential(m.tensor([1.0])).log_prob(m.tensor([-1.0])),
    "outside the interval": lambda d, m: d.Uniform(0.0, 1.0).log_prob(m.tensor(2.0)),
    "non-binary value": lambda d, m: d.Bernoulli(probs=m.tensor([0.5])).log_prob(m.tensor([0.5])),
    "probs above 1": lambda d, m: d.Bernoulli(probs=m.tensor([1.5])),
    "probs and logits": lambda d, m: d.Bernoulli(probs=m.tensor([0.5]), logits=m.tensor([0.0])),
    "neither": lambda d, m: d.Categorical(),
    "0-d probs": lambda d, m: d.Categorical(probs=m.tensor(1.0)),
    "category out of range": lambda d, m: d.Categorical(logits=m.zeros(3)).log_prob(m.tensor(3)),
    "batch mismatch": lambda d, m: d.Normal(m.zeros(3), 1.0).log_prob(m.zeros(4)),
    "event mismatch": lambda d, m: d.MultivariateNormal(m.zeros(3), m.eye(3)).log_prob(m.zeros(2)),
    "not positive-definite": lambda d, m: d.MultivariateNormal(m.zeros(2), m.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "scale_tril not lower": lambda d, m: d.MultivariateNormal(m.zeros(2), scale_tril=m.ones(2, 2)),
    "cov and scale_tril": lambda d, m: d.MultivariateNormal(m.zeros(2), m.eye(2), scale_tril=m.eye(2)),
    "0-d loc": lambda d, m: d.MultivariateNormal(m.tensor(0.0), m.eye(1)),
    "negative Poisson rate": lambda d, m: d.Poisson(m.tensor([-1.0])),
    "non-integer count": lambda d, m: d.Poisson(m.tensor([1.0])).log_prob(m.tensor([0.5])),
    "negative Gamma value": lambda d, m: d.Gamma(1.0, 1.0).log_prob(m.tensor(-1.0)),
    "Beta concentration 0": lambda d, m: d.Beta(m.tensor([0.0]), 1.0),
    "not one-hot": lambda d, m: d.OneHotCategorical(probs=m.ones(3) / 3).log_prob(m.tensor([1.0, 1.0, 0.0])),
    "too many reinterpreted dims": lambda d, m: d.Independent(d.Normal(m.zeros(3), 1.0), 2),
    "Dirichlet value off the simplex": lambda d, m: d.Dirichlet(m.ones(3)).log_prob(m.tensor([0.5, 0.5, 0.5])),
    "Dirichlet concentration 0": lambda d, m: d.Dirichlet(m.tensor([1.0, 0.0])),
    "StudentT df 0": lambda d, m: d.StudentT(m.tensor([0.0])),
    "LogNormal value negative": lambda d, m: d.LogNormal(0.0, 1.0).log_prob(m.tensor([-1.0])),
    "Binomial count above total": lambda d, m: d.Binomial(3, probs=m.tensor([0.5])).log_prob(m.tensor([4.0])),
    "Binomial non-integer total": lambda d, m: d.Binomial(m.tensor([2.5]), probs=m.tensor([0.5])),
    "Multinomial counts above total": lambda d, m: d.Multinomial(2, probs=m.ones(2) / 2).log_prob(m.tensor([2.0, 1.0])),
    "Chi2 df negative": lambda d, m: d.Chi2(m.tensor([-1.0])),
    "Cauchy scale 0": lambda d, m: d.Cauchy(0.0, m.tensor([0.0])),
    "HalfCauchy value negative": lambda d, m: d.HalfCauchy(1.0).log_prob(m.tensor([-1.0])),
    "HalfNormal scale negative": lambda d, m: d.HalfNormal(m.tensor([-1.0])),
    "Gumbel scale NaN": lambda d, m: d.Gumbel(0.0, m.tensor([float("nan")])),
    "Weibull value 0": lambda d, m: d.Weibull(1.0, 1.0).log_prob(m.tensor([0.0])),
    "Pareto value below scale": lambda d, m: d.Pareto(m.tensor([2.0]), 1.0).log_prob(m.tensor([1.5])),
    "Pareto alpha 0": lambda d, m: d.Pareto(1.0, m.tensor([0.0])),
    "Kumaraswamy value above 1": lambda d, m: d.Kumaraswamy(1.0, 1.0).log_prob(m.tensor([1.5])),
    "VonMises concentration 0": lambda d, m: d.VonMises(0.0, m.tensor([0.0])),
    "Geometric probs 0": lambda d, m: d.Geometric(probs=m.tensor([0.0, 0.5])),
    "Geometric non-integer": lambda d, m: d.Geometric(probs=m.tensor([0.5])).log_prob(m.tensor([1.5])),
    "NegativeBinomial probs 1": lambda d, m: d.NegativeBinomial(2.0, probs=m.tensor([1.0])),
    "NegativeBinomial total_count negative": lambda d, m: d.NegativeBinomial(m.tensor([-1.0]), probs=m.tensor([0.5])),
    "NegativeBinomial probs and logits": lambda d, m: d.NegativeBinomial(2.0, m.tensor([0.5]), m.tensor([0.0])),
    "Mixture not Categorical": lambda d, m: d.MixtureSameFamily(d.Normal(0.0, 1.0), d.Normal(m.zeros(3), 1.0)),
    "Mixture components mismatch": lambda d, m: d.MixtureSameFamily(d.Categorical(logits=m.zeros(2)),
                                                                   d.Normal(m.zeros(3), 1.0)),
    "LowRank cov_diag 0": lambda d, m: d.LowRankMultivariateNormal(m.zeros(2), m.ones(2, 1), m.tensor([1.0, 0.0])),
    "LowRank cov_factor rows": lambda d, m: d.LowRankMultivariateNormal(m.zeros(2), m.ones(3, 1), m.ones(2)),
    "LowRank cov_diag size": lambda d, m: d.LowRankMultivariateNormal(m.zeros(2), m.ones(2, 1), m.ones(3)),
    "RelaxedBernoulli value above 1": lambda d, m: d.RelaxedBernoulli(m.tensor(0.5), probs=m.tensor([0.5])).log_prob(
        m.tensor([1.5])),
    "RelaxedBernoulli probs above 1": lambda d, m: d.RelaxedBernoulli(m.tensor(0.5), probs=m.tensor([1.5])),
    "RelaxedOneHotCategorical off the simplex": lambda d, m: d.RelaxedOneHotCategorical(
        m.tensor(0.5), probs=m.ones(3) / 3).log_prob(m.tensor([0.5, 0.5, 0.5])),
}


@pytest.mark.parametrize("name", list(BAD))
def test_invalid_arguments_raise_as_torch(name):
    with pytest.raises(ValueError) as torch_err:
        BAD[name](torch.distributions, torch)
    with pytest.raises(ValueError) as ug_err:
        BAD[name](ug.distributions, ug)
    assert type(ug_err.value).__name__ == "ValueError", torch_err.value


def test_error_names_the_distribution_and_constraint():
    d = ug.distributions
    with pytest.raises(ValueError, match=r"Exponential.*support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        d.Exponential(ug.tensor([1.0])).log_prob(ug.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"parameter scale .*Normal.*GreaterThan\(lower_bound=0.0\)"):
        d.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match=r"^\[Chi2\] expected parameter df .*Chi2\(df"):
        d.Chi2(ug.tensor([-1.0]))
    # validate_args=False skips the checks, as in torch.
    assert np.isnan(d.Normal(0.0, -1.0, validate_args=False).log_prob(ug.tensor(0.0)).item())


def test_rsample_of_a_discrete_distribution_is_not_implemented():
    with pytest.raises(NotImplementedError, match="Bernoulli.*rsample"):
        ug.distributions.Bernoulli(probs=ug.tensor([0.5])).rsample()


def test_log_prob_under_jit_and_vmap():
    d = ug.distributions
    x, loc = ug.randn(4, 3), ug.randn(3)

    def f(loc, x):  # jit reads no value: the argument checks are off
        return d.MultivariateNormal(loc, scale_tril=2 * ug.eye(3), validate_args=False).log_prob(x)

    assert_close(ug.jit(f)(loc, x).numpy(), f(loc, x).numpy())
    logits = ug.randn(4, 3)
    values = ug.tensor([[0, 1, 2, 0], [2, 1, 0, 1]])
    batched = ug.vmap(lambda v: d.Categorical(logits=logits).log_prob(v))(values)
    looped = np.stack([d.Categorical(logits=logits).log_prob(v).numpy() for v in values])
    assert_close(batched.numpy(), looped)
    with pytest.raises(TypeError, match="traced tensor"):  # the checks read values: jit says so
        ug.jit(lambda s: d.Normal(0.0, s).log_prob(x))(ug.ones(3))


def test_expand_against_torch():
    def expanded(m, loc, scale, p):
        d = m.distributions
        dists = [d.Normal(loc, scale), d.Gamma(scale, scale), d.Dirichlet(p), d.Categorical(logits=p.log()),
                 d.Bernoulli(probs=scale / 3), d.StudentT(scale + 1, loc, scale), d.LogNormal(loc, scale),
                 d.Binomial(4, probs=scale / 3), d.Multinomial(3, probs=p), d.Chi2(scale),
                 d.MultivariateNormal(p, scale_tril=m.eye(3)), d.Independent(d.Normal(loc, scale), 1),
                 d.Cauchy(loc, scale), d.HalfCauchy(scale), d.HalfNormal(scale), d.Gumbel(loc, scale),
                 d.Weibull(scale, scale + 1), d.Pareto(scale, scale + 2), d.Kumaraswamy(scale, scale),
                 d.VonMises(loc, scale), d.Geometric(probs=scale / 3), d.NegativeBinomial(scale, logits=loc),
                 d.OneHotCategoricalStraightThrough(probs=p), d.LowRankMultivariateNormal(p, m.ones(3, 2, dtype=p.dtype), scale),
                 d.MixtureSameFamily(d.Categorical(probs=p), d.Normal(loc, scale))]
        out = []
        for x in dists:
            shape = (2, *x.batch_shape)
            e = x.expand(shape)
            out += [type(e).__name__, tuple(e.batch_shape), tuple(e.event_shape), e.mean]
        return out

    def check_all(m, loc, scale, p):
        return tuple(v for v in expanded(m, loc, scale, p) if not isinstance(v, (str, tuple)))

    loc, scale, p = arr((3,), "float64"), pos((3,), "float64", 1), probs((3,), "float64", 2)
    ug_meta = [v for v in expanded(ug, loc.make(ug), scale.make(ug), p.make(ug)) if isinstance(v, (str, tuple))]
    torch_meta = [v for v in expanded(torch, loc.make(torch), scale.make(torch), p.make(torch)) if isinstance(v, (str, tuple))]
    assert ug_meta == torch_meta
    check(check_all, loc, scale, p)
    with pytest.raises(ValueError):
        ug.distributions.Normal(ug.zeros(3), 1.0).expand((4,))


def test_rsample_is_the_implicit_reparameterisation():
    """Each draw x moves with the parameters as its quantile F(x) held fixed: dx/dθ = -(dF/dθ) / p(x),
    from the cdf and log_prob (float64)."""
    d = ug.distributions
    makers = {
        "Cauchy": lambda a, b: d.Cauchy(a - 1, b), "HalfCauchy": lambda a, b: d.HalfCauchy(a * b),
        "HalfNormal": lambda a, b: d.HalfNormal(a * b), "Gumbel": lambda a, b: d.Gumbel(a, b),
        "Weibull": lambda a, b: d.Weibull(a, b), "Pareto": lambda a, b: d.Pareto(a, b + 1),
        "Kumaraswamy": lambda a, b: d.Kumaraswamy(a, b),
        # gammainc has no derivative in its first argument (as torch's): the rate moves
        "InverseGamma": lambda a, b: d.InverseGamma(2.5, a + b),
        "GeneralizedPareto": lambda a, b: d.GeneralizedPareto(a, b, a - 1.0),
        "ContinuousBernoulli": lambda a, b: d.ContinuousBernoulli(probs=a / (a + b)),
    }
    for name, make in makers.items():
        a = ug.tensor([0.7, 1.5, 3.0], dtype=ug.float64, requires_grad=True)
        b = ug.tensor([0.5, 2.0, 1.2], dtype=ug.float64, requires_grad=True)
        ug.manual_seed(3)
        make(a, b).rsample((50,)).sum().backward()
        got = [a.grad.numpy(), b.grad.numpy()]
        a.grad, b.grad = None, None
        ug.manual_seed(3)
        x = make(a, b).sample((50,))
        dist = make(a, b)
        (-dist.cdf(x) / dist.log_prob(x).exp().detach()).sum().backward()
        assert_close(got[0], a.grad.numpy(), "float64", terms=np.abs(got[0]) + 1, n=50, path=name)
        assert_close(got[1], b.grad.numpy(), "float64", terms=np.abs(got[1]) + 1, n=50, path=name)


@pytest.mark.parametrize("name", ["Cauchy", "HalfCauchy"])
def test_sample_quantiles(name):
    """Heavy tails have no moments: the fraction of draws below quantiles within 6 standard errors."""
    d = ug.distributions
    dist = d.Cauchy(ug.tensor([1.0, -2.0]), ug.tensor([0.5, 3.0])) if name == "Cauchy" else d.HalfCauchy(
        ug.tensor([0.5, 3.0]))
    n, q = 40000, np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    ug.manual_seed(2)
    x = dist.sample((n,)).numpy()
    cut = np.stack([dist.icdf(ug.full((2,), float(p))).numpy() for p in q])
    frac = (x[None] <= cut[:, None]).mean(1)
    assert np.all(np.abs(frac - q[:, None]) <= 6 * np.sqrt(q * (1 - q) / n)[:, None]), frac


def test_von_mises_sample_circular_moments():
    """E cos(x - loc) = 1 - variance and E sin(x - loc) = 0 within 6 standard errors; angles in [-pi, pi)."""
    loc, k = ug.tensor([3.0, -1.0, 0.0, 2.0]), ug.tensor([1e-6, 0.5, 4.0, 50.0])
    dist = ug.distributions.VonMises(loc, k)
    n = 20000
    ug.manual_seed(4)
    x = dist.sample((n,)).double().numpy()
    assert x.dtype == np.float64 and np.all((x >= -np.pi) & (x < np.pi))
    c, s = np.cos(x - loc.double().numpy()), np.sin(x - loc.double().numpy())
    assert np.all(np.abs(c.mean(0) - (1 - dist.variance.double().numpy())) <= 6 * np.sqrt(c.var(0) / n) + 1e-6)
    assert np.all(np.abs(s.mean(0)) <= 6 * np.sqrt(s.var(0) / n))


def test_kumaraswamy_mode_is_the_density_maximum():
    """torch's mode formula takes log1p(-concentration0), NaN for every concentration0 > 1: this
    checks the closed form ((a - 1) / (a b - 1))^(1 / a) as the maximum of log_prob instead."""
    a, b = ug.tensor([1.5, 3.0, 2.0, 0.5], dtype=ug.float64), ug.tensor([2.0, 1.2, 0.8, 2.0], dtype=ug.float64)
    dist = ug.distributions.Kumaraswamy(a, b)
    mode = dist.mode.numpy()
    assert np.isnan(mode[2:]).all()
    grid = np.linspace(1e-4, 1 - 1e-4, 200001)[:, None].repeat(2, 1)
    best = grid[ug.distributions.Kumaraswamy(a[:2], b[:2]).log_prob(ug.tensor(grid)).numpy().argmax(0), 0]
    np.testing.assert_allclose(mode[:2], best, atol=1e-5)


def test_relaxed_rsample_against_torch_on_the_same_noise():
    """The relaxed draws and their gradients in temperature and logits: torch's formula on unigrad's
    uniform draws (the same seed), computed by torch's autograd (float64)."""
    d = ug.distributions
    logits = np.random.default_rng(1).uniform(-2, 2, (4, 3))
    for name in ["RelaxedBernoulli", "RelaxedOneHotCategorical"]:
        t, lg = ug.tensor(0.7, dtype=ug.float64, requires_grad=True), ug.tensor(logits, requires_grad=True)
        ug.manual_seed(6)
        x = getattr(d, name)(t, logits=lg).rsample((5,))
        w = np.random.default_rng(2).uniform(-1, 1, x.shape)
        (x * ug.tensor(w)).sum().backward()
        ug.manual_seed(6)
        u = np.clip(ug.rand(5, 4, 3, dtype=ug.float64).numpy(), np.finfo(np.float64).eps, 1 - np.finfo(np.float64).eps)
        tt, tl = torch.tensor(0.7, dtype=torch.float64, requires_grad=True), torch.tensor(logits, requires_grad=True)
        u = torch.tensor(u)
        if name == "RelaxedBernoulli":
            expected = ((u.log() - (-u).log1p() + tl) / tt).sigmoid()
        else:
            expected = ((torch.log_softmax(tl, -1) - (-u.log()).log()) / tt).softmax(-1)
        (expected * torch.tensor(w)).sum().backward()
        assert_close(x.detach().numpy(), expected.detach().numpy(), path=name)
        assert_close(t.grad.numpy(), tt.grad.numpy(), terms=np.abs(tt.grad.numpy()) + 1, n=60, path=name)
        assert_close(lg.grad.numpy(), tl.grad.numpy(), terms=np.abs(tl.grad.numpy()) + 1, n=5, path=name)


def test_relaxed_draws_round_to_their_discrete_distribution():
    """At any temperature, the argmax of a relaxed one-hot draw is Categorical(probs) (the Gumbel-max
    trick) and a relaxed Bernoulli draw lies above 1/2 with probability probs: frequencies within
    6 standard errors."""
    d = ug.distributions
    p = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    n = 20000
    ug.manual_seed(8)
    x = d.RelaxedOneHotCategorical(ug.tensor(1.5), probs=ug.tensor(p)).sample((n,)).numpy()
    freq = np.stack([(x.argmax(-1) == k).mean(0) for k in range(3)], -1)
    assert np.all(np.abs(freq - p) <= 6 * np.sqrt(p * (1 - p) / n)), freq
    y = d.RelaxedBernoulli(ug.tensor(0.3), probs=ug.tensor(p)).sample((n,)).numpy()
    assert np.all(np.abs((y > 0.5).mean(0) - p) <= 6 * np.sqrt(p * (1 - p) / n))


def test_straight_through_gradient_is_that_of_probs():
    """rsample is a one-hot draw whose gradient is that of probs, as torch's."""
    logits = np.random.default_rng(3).uniform(-2, 2, (2, 4))
    w = np.random.default_rng(4).uniform(-1, 1, (6, 2, 4))
    grads = []
    for m in (ug, torch):
        lg = m.tensor(logits, requires_grad=True)
        x = m.distributions.OneHotCategoricalStraightThrough(logits=lg).rsample((6,))
        assert np.all(x.detach().numpy().sum(-1) == 1) and set(np.unique(x.detach().numpy())) <= {0.0, 1.0}
        (x * m.tensor(w)).sum().backward()
        grads.append(lg.grad.numpy())
    assert_close(grads[0], grads[1], "float64")


def test_relaxed_expand_against_torch():
    """The relaxed distributions have no moments: their expansions compared by log_prob."""
    def expanded(m, t, logits, v, w):
        d = m.distributions
        rb = d.RelaxedBernoulli(t, logits=logits).expand((2, 3))
        rc = d.RelaxedOneHotCategorical(t, probs=logits.exp()).expand((2,))
        return [type(rb).__name__, tuple(rb.batch_shape), type(rc).__name__, tuple(rc.batch_shape),
                tuple(rc.event_shape), rb.log_prob(v), rc.log_prob(w)]

    t, logits = arr((), "float64", 0.3, 2, 1), arr((3,), "float64", seed=2)
    v = Arg(np.random.default_rng(3).uniform(0.05, 0.95, (2, 3)))
    w = Arg(np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]))
    check(expanded, t, logits, v, w)


def test_low_rank_multivariate_normal_matrices_against_torch():
    def matrices(m, a, w, dg):
        dist = m.distributions.LowRankMultivariateNormal(a, w, dg)
        return [dist.covariance_matrix, dist.precision_matrix, dist.scale_tril]

    check(matrices, arr((4,), "float64"), arr((2, 4, 2), "float64", -1, 1, 1), pos((4,), "float64", 3))


@pytest.mark.parametrize("name", ["VonMises", "LowRankMultivariateNormal", "MixtureSameFamily", "StickBreaking"])
def test_new_log_probs_under_vmap_and_jit(name):
    d = ug.distributions
    makers = {  # jit reads no value: the argument checks are off
        "VonMises": lambda: d.VonMises(ug.zeros(3), ug.full((3,), 2.0), validate_args=False),
        "LowRankMultivariateNormal": lambda: d.LowRankMultivariateNormal(ug.zeros(3), ug.ones(3, 1), ug.ones(3),
                                                                         validate_args=False),
        "MixtureSameFamily": lambda: d.MixtureSameFamily(d.Categorical(logits=ug.zeros(3), validate_args=False),
                                                         d.Normal(ug.arange(3.0), 1.0, validate_args=False),
                                                         validate_args=False),
        "StickBreaking": lambda: d.TransformedDistribution(d.Normal(ug.zeros(2), 1.0, validate_args=False),
                                                           [d.StickBreakingTransform()], validate_args=False),
    }
    values = {"MixtureSameFamily": lambda v: v[0], "StickBreaking": lambda v: v.softmax(-1)}

    def f(v):
        return makers[name]().log_prob(values.get(name, lambda v: v)(v))

    x = ug.tensor(np.random.default_rng(4).uniform(-2, 2, (5, 3)).astype(np.float32))
    looped = np.stack([f(v).numpy() for v in x])
    assert_close(ug.vmap(f)(x).numpy(), looped)
    assert_close(ug.jit(f)(x[0]).numpy(), looped[0])
