"""Reparameterised Gamma draws: random.gamma's derivative in the concentration is the implicit
reparameterisation gradient (ug._standard_gamma_grad), checked against finite differences of
the quantile function (scipy's gammaincinv, float64), JAX's random_gamma_grad and torch's
_standard_gamma_grad; under grad, jit and vmap; and the rsample of the distributions built on
it: the gradient of a sample mean within a bound from its standard error of the analytic one."""
import numpy as np
import pytest
import torch
from scipy.special import gammainc, gammaincinv, gammaln

import unigrad as ug
from reference import assert_close

ALPHAS = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0]


def draws(n=400, seed=0):
    """Gamma(alpha) draws [n, len(ALPHAS)] in float64 and their alphas broadcast."""
    a = ug.tensor(ALPHAS, dtype=ug.float64)
    x = ug.random.gamma(ug.random.key(seed), a, (n, len(ALPHAS)), dtype=ug.float64)
    return np.broadcast_to(np.array(ALPHAS), (n, len(ALPHAS))), x.numpy()


def quantile_fd(a, x):
    """d x / d a with P(a, x) held fixed: central differences of gammaincinv (step 1e-6 a)."""
    u, h = gammainc(a, x), 1e-6 * a
    return (gammaincinv(a + h, u) - gammaincinv(a - h, u)) / (2 * h), u


def test_gamma_grad_against_finite_differences_of_the_quantile():
    a, x = draws()
    g = ug._standard_gamma_grad(ug.tensor(a), ug.tensor(x)).numpy()
    fd, u = quantile_fd(a, x)
    # gammaincinv loses digits where the quantile is near 0 or 1 and where x underflows.
    ok = (u > 1e-10) & (u < 1 - 1e-10) & (x > 1e-280)
    assert ok.sum(0).min() > 300
    np.testing.assert_allclose(g[ok], fd[ok], rtol=1e-6)


def test_gamma_grad_against_jax(jax64):
    a, x = draws(seed=1)
    expected = np.asarray(jax64.lax.random_gamma_grad(a, x))
    np.testing.assert_allclose(ug._standard_gamma_grad(ug.tensor(a), ug.tensor(x)).numpy(), expected, rtol=1e-9,
                               atol=1e-300)


def test_gamma_grad_for_large_alphas_against_jax(jax64):
    """Past a = 2500 Wilson and Hilferty's cube-root approximation takes over (~1e-6)."""
    a = np.broadcast_to(np.array([2000.0, 3000.0, 1e4, 1e5]), (200, 4))
    x = ug.random.gamma(ug.random.key(5), ug.tensor(a[0]), a.shape, dtype=ug.float64).numpy()
    expected = np.asarray(jax64.lax.random_gamma_grad(a, x))
    np.testing.assert_allclose(ug._standard_gamma_grad(ug.tensor(a), ug.tensor(x)).numpy(), expected, rtol=1e-5)


def test_gamma_grad_against_torch():
    a, x = draws(seed=2)
    expected = torch._standard_gamma_grad(torch.tensor(a).contiguous(), torch.tensor(x)).numpy()
    # torch's is an approximation (series, saddle point and rational fits): ~1e-3 relative
    np.testing.assert_allclose(ug._standard_gamma_grad(ug.tensor(a), ug.tensor(x)).numpy(), expected, rtol=2e-3,
                               atol=1e-300)


def test_gamma_grad_edges_and_float32():
    a = ug.tensor([0.5, 2.0, 2.0], dtype=ug.float32)
    g = ug._standard_gamma_grad(a, ug.tensor([0.0, float("inf"), 1.5]))
    assert g.dtype == ug.float32
    np.testing.assert_array_equal(g.numpy()[:2], [0.0, 0.0])
    exact = ug._standard_gamma_grad(ug.tensor(2.0, dtype=ug.float64), ug.tensor(1.5, dtype=ug.float64))
    assert_close(g.numpy()[2], exact.numpy(), dtype="float32")


def test_gamma_grad_kernel_matches_its_differentiable_form():
    """The gradient is one kernel, its sums stopped once converged; where it is differentiated
    (a requires grad) it is the same formula written with ops, run to 300 terms."""
    a = np.repeat([1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 100.0, 1000.0, 2400.0, 2600.0], 120)
    x = a * np.tile(np.exp(np.linspace(-8.0, 3.0, 120)), 10)
    fast = ug._standard_gamma_grad(ug.tensor(a), ug.tensor(x)).numpy()
    composed = ug._standard_gamma_grad(ug.tensor(a, requires_grad=True), ug.tensor(x)).detach().numpy()
    np.testing.assert_allclose(fast, composed, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype, alphas", [("float64", [0.01, 0.2, 0.5, 0.9, 2.0, 50.0]),
                                           ("float32", [0.2, 0.5, 0.9, 2.0, 50.0])])  # Gamma(0.01) underflows
def test_loggamma_derivative_is_the_implicit_gradient_in_log_space(dtype, alphas):
    """loggamma's draws are the logs of gamma's (one key), and its derivative is d log x / da =
    random_gamma_grad(a, x) / x, as jax.random.loggamma's. It differentiated the sampler's own
    ops (the boost by U^(1/a) and the accepted Marsaglia-Tsang transform), off by 13% at a = 0.5."""
    key, dt, shape = ug.random.key(4), getattr(ug, dtype), (50, len(alphas))
    a = ug.tensor(alphas, dtype=dt)
    x = ug.random.gamma(key, a, shape, dtype=dt).to(ug.float64)
    assert_close(ug.random.loggamma(key, a, shape, dtype=dt).numpy(), x.log().numpy(), dtype=dtype)
    grad = ug.grad(lambda a: ug.random.loggamma(key, a, shape, dtype=dt).sum())(a)
    each = ug._standard_gamma_grad(ug.tensor(np.broadcast_to(alphas, shape)), x) / x
    # Each term's relative error is its rounding in dtype (the draw's log read back): eps-sized.
    tol = 8 * np.finfo(dtype).eps * each.abs().sum(0).numpy()
    err = np.abs(grad.numpy() - each.sum(0).numpy())
    assert (err <= tol).all(), (err, tol)


def test_loggamma_second_derivative_against_finite_differences():
    """d2(log x)/da2 at fixed quantile, as test_gamma_second_derivative_against_finite_differences."""
    a0, key = 0.7, ug.random.key(4)

    def log_x_of(a):
        return ug.random.loggamma(key, a, (), dtype=ug.float64)

    second = ug.grad(ug.grad(log_x_of))(ug.tensor(a0, dtype=ug.float64)).item()
    x = np.exp(log_x_of(ug.tensor(a0, dtype=ug.float64)).item())
    u, h = gammainc(a0, x), 1e-4
    fd = (np.log(gammaincinv(a0 + h, u)) - 2 * np.log(x) + np.log(gammaincinv(a0 - h, u))) / h**2
    assert abs(second - fd) <= 1e-5 * max(1.0, abs(fd)), (second, fd)


def test_gamma_backward_runs_the_kernel_alone():
    a = ug.tensor([0.5, 2.0, 50.0], dtype=ug.float64, requires_grad=True)
    x = ug.random.gamma(ug.random.key(3), a, (100, 3), dtype=ug.float64)
    with ug.profiler.profile() as prof:
        x.sum().backward()
    counts = {row.key: row.count for row in prof.key_averages()}
    assert counts.get("random_gamma_grad") == 1 and "digamma" not in counts, counts


def test_random_gamma_derivative_is_the_implicit_gradient():
    key = ug.random.key(3)
    a = ug.tensor([0.2, 2.0, 50.0], dtype=ug.float64, requires_grad=True)
    x = ug.random.gamma(key, a, (7, 3), dtype=ug.float64)
    (x * x).sum().backward()
    xd = x.detach()
    expected = (2 * xd * ug._standard_gamma_grad(a.detach(), xd)).sum(0)
    assert_close(a.grad.numpy(), expected.numpy())

    def total(a):
        return ug.random.gamma(key, a, (7, 3), dtype=ug.float64).sum()

    eager = ug.grad(total)(a.detach())
    assert_close(eager.numpy(), ug._standard_gamma_grad(a.detach(), xd).sum(0).numpy())
    assert_close(ug.jit(ug.grad(total))(a.detach()).numpy(), eager.numpy())
    batched = ug.vmap(ug.grad(total))(ug.stack([a.detach(), 2 * a.detach()]))
    assert_close(batched[0].numpy(), eager.numpy())
    assert_close(batched[1].numpy(), ug.grad(total)(2 * a.detach()).numpy())
    # forward mode agrees with reverse mode
    _, tangent = ug.jvp(total, (a.detach(),), (ug.ones(3, dtype=ug.float64),))
    assert_close(tangent.numpy(), eager.sum().numpy())


def test_gamma_second_derivative_against_finite_differences():
    """d2x/da2 at fixed quantile: the derivative rule is written with ops, so it differentiates."""
    a0, key = 2.5, ug.random.key(4)

    def x_of(a):
        return ug.random.gamma(key, a, (), dtype=ug.float64)

    second = ug.grad(ug.grad(x_of))(ug.tensor(a0, dtype=ug.float64)).item()
    x = x_of(ug.tensor(a0, dtype=ug.float64)).item()
    u, h = gammainc(a0, x), 1e-4
    fd = (gammaincinv(a0 + h, u) - 2 * x + gammaincinv(a0 - h, u)) / h**2
    assert abs(second - fd) <= 1e-5 * max(1.0, abs(fd))




@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet", "Chi2", "StudentT"])
def test_rsample_gradient_of_the_mean(name):
    """d/dtheta E[f(X)] by rsample against the analytic derivative, within 6 standard errors.
    Each draw gets its own copy of the parameters (one row each), so that one backward pass
    gives every draw's pathwise derivative: their mean is the estimate, their standard
    deviation over sqrt(n) its standard error."""
    d, n = ug.distributions, 40000
    cases = {
        # concentration -> E[X] = c / rate: d/dc = 1 / rate
        "Gamma": (lambda c: d.Gamma(c, 2.0), [0.05, 0.3, 1.0, 5.0, 40.0], lambda x: x, lambda c: np.full_like(c, 0.5)),
        # E[X] = c1 / (c1 + c0), c0 = 2
        "Beta": (lambda c: d.Beta(c, 2.0), [0.3, 1.0, 5.0], lambda x: x, lambda c: 2.0 / (c + 2.0) ** 2),
        # E[X_0] = c_0 / sum(c)
        "Dirichlet": (lambda c: d.Dirichlet(c), [0.5, 2.0, 3.0], lambda x: x[..., :1],
                      lambda c: (np.eye(3)[0] * c.sum() - c[0]) / c.sum() ** 2),
        # E[X^2] = df (df + 2): d/ddf = 2 df + 2
        "Chi2": (lambda df: d.Chi2(df), [0.5, 3.0, 10.0], lambda x: x * x, lambda df: 2 * df + 2),
        # E|T| = 2 sqrt(df) Gamma((df + 1) / 2) / (sqrt(pi) (df - 1) Gamma(df / 2))
        "StudentT": (lambda df: d.StudentT(df), [3.0, 8.0], lambda x: x.abs(), student_abs_mean_slope),
    }
    make, param, f, slope = cases[name]
    p = ug.tensor(np.tile(param, (n, 1)), dtype=ug.float64, requires_grad=True)
    ug.manual_seed(0)
    f(make(p).rsample()).sum().backward()
    per_draw = p.grad.numpy()
    estimate, se = per_draw.mean(0), per_draw.std(0, ddof=1) / np.sqrt(n)
    expected = slope(np.array(param))
    assert np.all(np.abs(estimate - expected) <= 6 * se), (estimate, expected, se)


def student_abs_mean_slope(df):
    def abs_mean(v):
        return 2 * np.sqrt(v) * np.exp(gammaln((v + 1) / 2) - gammaln(v / 2)) / (np.sqrt(np.pi) * (v - 1))

    h = 1e-5
    return (abs_mean(df + h) - abs_mean(df - h)) / (2 * h)


def test_has_rsample():
    d = ug.distributions
    for dist in (d.Gamma(1.0, 1.0), d.Beta(1.0, 1.0), d.Dirichlet(ug.ones(3)), d.Chi2(ug.tensor(2.0)),
                 d.StudentT(3.0), d.LogNormal(0.0, 1.0)):
        assert dist.has_rsample, dist


def test_standard_gamma_follows_the_seed_and_differentiates():
    alpha = ug.tensor([0.5, 4.0], requires_grad=True)
    ug.manual_seed(9)
    x = ug._standard_gamma(alpha)
    ug.manual_seed(9)
    np.testing.assert_array_equal(ug._standard_gamma(alpha.detach()).numpy(), x.detach().numpy())
    x.sum().backward()
    assert_close(alpha.grad.numpy(), ug._standard_gamma_grad(alpha.detach(), x.detach()).numpy())
    with pytest.raises(TypeError, match="_standard_gamma"):
        ug._standard_gamma(ug.tensor([1, 2]))
