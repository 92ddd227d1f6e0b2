"""ug.special (and ug.igamma, ug.igammac, ug.polygamma) against torch.special, and against
scipy.special where torch's own value is not accurate to float64 (see each case), on random
inputs over each function's domain and at its edges, in float32 and float64; gradients against
torch's and against central differences in float64, where torch differentiates.

Tolerances. The functions are computed in float64 and rounded to the input's dtype. float64:
where the series and fractions have converged, what is left is the rounding of the few ops
that follow them (a log, an exp of a value up to ~700, a Lanczos lgamma): ~1e-13 relative
(igamma's x^a e^-x / Gamma(a) front loses |a log x| eps, 1e-13 at a = 100). float32: unigrad
rounds the float64 value once, so it is compared with the float64 reference on the same float32
inputs rounded to float32, to 2 ulp (2.4e-7); torch's float32 kernels, which sum their series in
float32 (a few ulp per term over 10-30 terms, 5e-5 seen for gammainc), are not the reference."""
import math

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_op

try:
    import scipy.special as scipy_special
except ImportError:  # pragma: no cover
    scipy_special = None

F64, F32 = 1e-13, 2.4e-7


def sample(low, high, n=64, seed=0, edges=()):
    """n uniform draws in [low, high) and the edge values, float64."""
    values = np.random.default_rng(seed).uniform(low, high, n)
    return np.concatenate([values, np.array(edges, np.float64)])


def compare(name, inputs, rtol64=F64, atol=0.0, torch_fn=None, ug_fn=None, scipy_fn=None):
    """ug_fn against torch_fn (default: special.<name>) on the float64 inputs, or against
    scipy_fn when given (and scipy installed): where torch's own float64 value is not accurate.
    Then on their float32 copies, against that float64 reference on the same (rounded) inputs."""
    torch_fn = torch_fn or getattr(torch.special, name)
    ug_fn = ug_fn or getattr(ug.special, name)

    def reference(args):
        if scipy_fn is not None and scipy_special is not None:
            return (getattr(scipy_special, scipy_fn) if isinstance(scipy_fn, str) else scipy_fn)(*args)
        return torch_fn(*[torch.from_numpy(a) for a in args]).numpy()

    for dtype, rtol in ((np.float64, rtol64), (np.float32, F32)):
        args = [np.asarray(v, dtype) for v in inputs]
        expected = reference([a.astype(np.float64) for a in args])
        actual = ug_fn(*[ug.tensor(a) for a in args]).numpy()
        assert actual.dtype == torch_fn(*[torch.from_numpy(a) for a in args]).numpy().dtype, name
        with np.errstate(over="ignore"):  # float32 overflows to inf where float64 does not
            expected = expected.astype(dtype)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{name} {dtype}")


UNARY = [
    # name, low, high, edges, options. torch's ndtr is 1 + erf(x / sqrt(2)) halved, 0 below
    # x ~ -8.3 and no better than 1e-16 absolute: scipy's is the reference.
    ("ndtr", -12.0, 12.0, (0.0, -40.0, 40.0, np.inf, -np.inf, np.nan), {"scipy_fn": "ndtr"}),
    # torch's log_ndtr right of 0 is log1p(-ndtr(-x)) with exp(-x^2 / 2) rounded: x^2 eps,
    # 1e-13 at x = 30 (ours against math.erfc below).
    ("log_ndtr", -40.0, 8.0, (0.0, -1.0, -300.0, 30.0, np.inf, -np.inf, np.nan), {"rtol64": 2e-13}),
    ("erfcx", -26.0, 60.0, (0.0, 2.5, -30.0, 1e10, np.inf, -np.inf, np.nan), {}),
    ("i0e", -60.0, 60.0, (0.0, 20.0, -20.0, 700.0, np.inf, -np.inf, np.nan), {}),
    ("i1", -60.0, 60.0, (0.0, 20.0, -20.0, -1e-5, np.inf, -np.inf, np.nan), {}),
    ("i1e", -60.0, 60.0, (0.0, 20.0, -20.0, 700.0, np.inf, -np.inf, np.nan), {}),
    ("entr", 0.0, 10.0, (0.0, -1.0, 1.0, np.inf, -np.inf, np.nan), {}),
]


@pytest.mark.parametrize("name, low, high, edges, options", UNARY, ids=[u[0] for u in UNARY])
def test_unary_functions_match_torch(name, low, high, edges, options):
    compare(name, [sample(low, high, edges=edges)], **options)


def test_log_ndtr_against_the_c_library():
    x = sample(-37.0, 8.0, seed=9)
    expected = [math.log(0.5 * math.erfc(-v / math.sqrt(2))) if v < 0 else math.log1p(-0.5 * math.erfc(v / math.sqrt(2)))
                for v in x]
    np.testing.assert_allclose(ug.special.log_ndtr(ug.tensor(x)).numpy(), expected, rtol=2e-15)


def test_ndtri_over_the_unit_interval_and_its_tails():
    p = np.concatenate([sample(0.0, 1.0), 10.0 ** -np.arange(1, 300, 7.3), 1 - 10.0 ** -np.arange(1, 16, 1.5),
                        [0.0, 1.0, 0.5, 0.5 + 1e-12, -0.1, 1.1, np.nan]])
    compare("ndtri", [p])
    if scipy_special is not None:
        np.testing.assert_allclose(ug.special.ndtri(ug.tensor(p)).numpy(), scipy_special.ndtri(p), rtol=F64,
                                   equal_nan=True)


def test_gammainc_and_gammaincc():
    a = np.concatenate([sample(0.01, 100.0, 48, seed=1), sample(0.01, 3.0, 16, seed=2)])
    x = np.concatenate([sample(0.0, 150.0, 48, seed=3), sample(0.0, 5.0, 16, seed=4)])
    # a and x of the same size near x = a + 1, where the series meets the fraction
    a = np.concatenate([a, [5.0, 50.0, 100.0, 300.0], [0.0, 1.0, 0.0, -1.0, 2.0, np.inf, 1.0, np.nan, 2.0]])
    x = np.concatenate([x, [6.0, 51.0, 101.0, 301.0], [1.0, 0.0, 0.0, 1.0, -1.0, 1.0, np.inf, 1.0, np.nan]])
    # torch's own float64 values are good to 1e-9 only (x near a ~ 80): scipy's are the float64
    # reference. Ours lose |a log x| eps in x^a e^-x / Gamma(a): 5e-13 for a, x up to 150.
    compare("gammainc", [a, x], rtol64=5e-13, scipy_fn="gammainc")
    compare("gammaincc", [a, x], rtol64=5e-13, atol=1e-300, scipy_fn="gammaincc")
    compare("igamma", [a, x], rtol64=2e-9, torch_fn=torch.igamma, ug_fn=ug.igamma)
    compare("igammac", [a, x], rtol64=2e-9, torch_fn=lambda p, q: p.igammac(q), ug_fn=lambda p, q: p.igammac(q))
    check(lambda m, p, q: p.clone().igamma_(q), Arg(a[:64]), Arg(x[:64]), rtol=2e-9)


def test_polygamma():
    x = np.concatenate([sample(0.05, 40.0, seed=5), sample(-6.0, -0.05, 16, seed=6),
                        [1.0, 1e-3, 0.0, np.inf, -np.inf, np.nan]])
    # torch's trigamma (n = 1) is good to 4e-10 only: scipy's is the float64 reference there,
    # at finite x (torch's values at +-inf are the ones to match).
    def trigamma(t):
        return np.where(np.isfinite(t), scipy_special.polygamma(1, t), torch.special.polygamma(1, torch.from_numpy(t)))

    for n in (1, 2, 3, 6):
        compare("polygamma", [x], rtol64=1e-12, torch_fn=lambda t, n=n: torch.special.polygamma(n, t),
                ug_fn=lambda t, n=n: ug.special.polygamma(n, t),
                scipy_fn=trigamma if n == 1 and scipy_special is not None else None)
    check(lambda m, t: t.polygamma(2), arr((3, 4), "float64", 0.5, 4.0))
    check(lambda m, t: t.clone().polygamma_(3), arr((3, 4), "float64", 0.5, 4.0))
    check(lambda m, t: m.polygamma(0, t), arr((3, 4), "float64", 0.5, 4.0))
    with pytest.raises(RuntimeError, match=r"\[polygamma\] n must be non-negative"):
        ug.polygamma(-1, ug.ones(2))


def test_zeta():
    x = np.concatenate([sample(1.05, 25.0, seed=7), [2.0, 3.0, 1.0, 0.5, 3.0, 3.0, 2.5, np.inf, 2.0, np.nan]])
    q = np.concatenate([sample(0.05, 50.0, seed=8), [1.0, -2.5, 1.0, 1.0, 0.0, -1.0, -1.5, 2.0, np.inf, 1.0]])
    compare("zeta", [x, q], rtol64=1e-12)
    assert ug.special.zeta(2.0, ug.tensor([1.0], dtype=ug.float64)).item() == pytest.approx(np.pi ** 2 / 6, rel=1e-15)
    check(lambda m, q: m.special.zeta(q, 3.0), arr((4,), "float32", 1.5, 4.0))


def test_xlog1py():
    x = np.array([0.0, 0.0, 1.5, -2.0, 3.0, np.nan, 0.0])
    y = np.array([-1.0, np.nan, 0.5, 1e-20, -1.0, 1.0, 3.0])
    compare("xlog1py", [x, y])
    check(lambda m, a: m.special.xlog1py(a, 2), arr((3,), "float32"))


BESSEL = [
    # name, scipy's name (torch's J and Y of orders 0 and 1 are off by up to 1e-6 just past x = 5,
    # where Cephes switches to its asymptotic form: scipy's are the float64 reference there and
    # torch's are compared to 1e-6 absolute), low, high
    ("bessel_j0", "j0", -60.0, 60.0), ("bessel_j1", "j1", -60.0, 60.0), ("bessel_y0", "y0", 0.0, 60.0),
    ("bessel_y1", "y1", 0.0, 60.0), ("modified_bessel_i0", "i0", -60.0, 60.0), ("modified_bessel_i1", "i1", -60.0, 60.0),
    ("modified_bessel_k0", "k0", 0.0, 60.0), ("modified_bessel_k1", "k1", 0.0, 60.0),
    ("scaled_modified_bessel_k0", "k0e", 0.0, 60.0), ("scaled_modified_bessel_k1", "k1e", 0.0, 60.0),
    ("spherical_bessel_j0", None, -60.0, 60.0),
    # torch's airy_ai is off by up to 2.3e-6 too; left of 0 Ai oscillates (absolute error), right
    # of it the relative error grows as (2/3) x^(3/2) eps (exp of that), 3e-14 at x = 30; left
    # of -12 the phase (2/3)|x|^(3/2) carries its rounding, 310 eps (7e-14) at -60, into the value.
    ("airy_ai", lambda x: scipy_special.airy(x)[0], -60.0, 30.0),
]


@pytest.mark.parametrize("name, scipy_name, low, high", BESSEL, ids=[b[0] for b in BESSEL])
def test_bessel_functions(name, scipy_name, low, high):
    # J and Y are accurate in absolute terms (near their zeros the relative error grows, as any
    # method's): float64 atol 2e-15 beside rtol 1e-13 (the series at x = 2 and Miller's sums
    # leave ~1e-15); I and K to 1e-13 relative. Edges: 0, the boundaries between methods (2, 20,
    # 25), 700 (e^x near overflow), +-inf, NaN and a negative x (NaN for Y and K).
    x = sample(low, high, 200, edges=(0.0, 1e-300, 2.0, 20.0, 25.0, 700.0, 1e10, -1.0, np.inf, -np.inf, np.nan))
    oscillating = name.startswith(("bessel", "spherical", "airy"))
    atol = 2e-14 if name == "airy_ai" else 2e-15 if oscillating else 0.0
    rtol = 5e-14 if name == "airy_ai" else 1e-13
    torch_fn, ug_fn = getattr(torch.special, name), getattr(ug.special, name)
    ours = ug_fn(ug.tensor(x)).numpy()
    theirs = torch_fn(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-5 if name.startswith(("bessel", "airy")) else atol,
                               equal_nan=True)
    if scipy_special is not None and scipy_name is not None:
        finite = np.isfinite(x) & (x != 1e10)  # scipy's j0(1e10) and torch's differ by 1e-11 (cos of a large x)
        reference = getattr(scipy_special, scipy_name) if isinstance(scipy_name, str) else scipy_name
        np.testing.assert_allclose(ours[finite], reference(x[finite]), rtol=rtol, atol=atol, equal_nan=True)
    x32 = x.astype(np.float32)
    with np.errstate(over="ignore"):
        rounded = ug_fn(ug.tensor(x32.astype(np.float64))).numpy().astype(np.float32)
    np.testing.assert_array_equal(ug_fn(ug.tensor(x32)).numpy(), rounded)  # float32: float64's value rounded
    t = ug.tensor(x[:4], requires_grad=True)
    assert not ug_fn(t).requires_grad  # not differentiable, as torch's


POLYNOMIALS = [name for name in dir(torch.special) if name.endswith(tuple(f"polynomial_{k}" for k in "tuvwhelp"))]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials(name):
    # Same recurrences and closed forms as torch's in float64, rounded differently (torch writes
    # 2k + 1 - x where we write 2j - 1 - x, ...): 1e-12 relative over degrees up to 40, values up
    # to 1e50; float32 is float64's value rounded. Edges: the ends +-1 (0 and 1 shifted), 0,
    # negative degrees (0), non-integer ones (truncated), degrees past Hermite's limits (NaN).
    rng = np.random.default_rng(11)
    low, high = (0.0, 1.0) if name.startswith("shifted") else (-10.0, 10.0) if "laguerre" in name else (-1.0, 1.0)
    x = np.concatenate([rng.uniform(low - 0.2 * (high - low), high + 0.2 * (high - low), 300),
                        [-1.0, 1.0, 0.0, 0.5, 2.0, -1.0, 1.0, 0.0, 0.5, 0.25, 0.25, 0.7, 0.3, np.inf]])
    n = np.concatenate([rng.integers(-2, 40, 300).astype(np.float64),
                        [7.0, 9.0, 12.0, 3.0, 5.0, 0.0, 1.0, -1.0, 3.7, 129.0, 513.0, 100.0, 60.0, 2.0]])
    expected = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    fn = getattr(ug.special, name)
    actual = fn(ug.tensor(x), ug.tensor(n)).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12, equal_nan=True)
    x32, n32 = x.astype(np.float32), n.astype(np.float32)
    with np.errstate(over="ignore"):
        rounded = fn(ug.tensor(x32.astype(np.float64)), ug.tensor(n32.astype(np.float64))).numpy().astype(np.float32)
    if "hermite" in name:
        rounded[n32 > 128] = np.nan  # torch's float32 limit
    np.testing.assert_array_equal(fn(ug.tensor(x32), ug.tensor(n32)).numpy(), rounded)
    # torch's value at a NaN x is whatever its loop left (it stops at once): ours is NaN
    assert np.isnan(fn(ug.tensor([np.nan]), ug.tensor([5.0])).numpy()).all()
    check(lambda m, t: getattr(m.special, name)(t, 3), arr((4,), "float32", low, high))
    check(lambda m, k: getattr(m.special, name)(0.25, k), arr((4,), "int64", 0, 9))
    assert not fn(ug.tensor(x[:3], requires_grad=True), 2).requires_grad  # not differentiable, as torch's


def test_polynomials_refuse_a_trace():
    # The recurrence's length is read from n: a program would keep the first call's.
    compiled = ug.jit(lambda x, n: ug.special.chebyshev_polynomial_t(x, n))
    with pytest.raises(RuntimeError, match=r"\[chebyshev_polynomial_t\] runs its recurrence to the largest degree"):
        compiled(ug.tensor([1.5, -2.0]), ug.tensor([2.0, 3.0]))


def test_reexports_are_torch_special_names():
    x = arr((3, 4), "float64")
    check(lambda m, t: m.special.softmax(t, 1, dtype=m.float32), x)
    check(lambda m, t: m.special.log_softmax(t, 0), x)
    check(lambda m, t: m.special.logsumexp(t, 1, keepdim=True), x)
    check(lambda m, t: m.special.round(t), x)
    check(lambda m, t: m.special.i1(t), arr((3,), "int64", 0, 4))  # integers: float32


DIFFERENTIABLE = [
    # name, fn, inputs (float64: the derivatives are checked there)
    ("gammainc", lambda m, a, t: m.special.gammainc(a.detach(), t), arr((3, 4), "float64", 0.5, 6.0),
     arr((4,), "float64", 0.1, 8.0, seed=1)),
    ("gammaincc", lambda m, a, t: m.special.gammaincc(a.detach(), t), arr((3, 4), "float64", 0.5, 6.0),
     arr((4,), "float64", 0.1, 8.0, seed=1)),
    ("polygamma", lambda m, t: m.special.polygamma(2, t), arr((3, 4), "float64", 0.3, 5.0)),
    ("zeta", lambda m, s, q: m.special.zeta(s.detach(), q), arr((3, 4), "float64", 1.5, 5.0),
     arr((4,), "float64", 0.3, 4.0, seed=1)),
    ("xlog1py", lambda m, a, b: m.special.xlog1py(a, b), arr((3, 4), "float64"), arr((4,), "float64", 0.0, 3.0)),
    ("entr", lambda m, t: m.special.entr(t), arr((3, 4), "float64", 0.1, 4.0)),
    ("ndtr", lambda m, t: m.special.ndtr(t), arr((3, 4), "float64", -6.0, 6.0)),
    ("log_ndtr", lambda m, t: m.special.log_ndtr(t), arr((3, 4), "float64", -20.0, 6.0)),
    ("ndtri", lambda m, t: m.special.ndtri(t), arr((3, 4), "float64", 0.01, 0.99)),
    ("erfcx", lambda m, t: m.special.erfcx(t), arr((3, 4), "float64", -4.0, 10.0)),
    ("i0e", lambda m, t: m.special.i0e(t), arr((3, 4), "float64", -25.0, 25.0)),
    ("i1", lambda m, t: m.special.i1(t), arr((3, 4), "float64", -25.0, 25.0)),
    ("i1e", lambda m, t: m.special.i1e(t), arr((3, 4), "float64", -25.0, 25.0)),
]


@pytest.mark.parametrize("name, fn, inputs", [(d[0], d[1], d[2:]) for d in DIFFERENTIABLE],
                         ids=[d[0] for d in DIFFERENTIABLE])
def test_derivatives(name, fn, inputs):
    # The rules are the closed forms torch uses (gammainc: x^(a-1) e^-x / Gamma(a), polygamma:
    # polygamma(n + 1), ...), so they match torch's to the values' 1e-12; fd checks them
    # against unigrad's own forward (and so checks our jvp, which torch lacks for some).
    off = {"jvp": "torch has no forward mode for it"} if name in NO_TORCH_JVP else {}
    check_op(fn, *inputs, only=("vjp", "fd", "jvp", "vmap"), off=off, rtol=1e-9)


NO_TORCH_JVP = ("gammainc", "gammaincc", "zeta")


@pytest.mark.parametrize("name", NO_TORCH_JVP)
def test_forward_mode_where_torch_has_none(name):
    a, t = ug.tensor([1.5, 3.0], dtype=ug.float64), ug.tensor([0.7, 2.0], dtype=ug.float64)
    fn = getattr(ug.special, name)
    _, tangent = ug.func.jvp(lambda u: fn(a, u), (t,), (ug.ones_like(t),))
    (grad,) = ug.autograd.grad(fn(a, t.requires_grad_()).sum(), [t])
    np.testing.assert_allclose(tangent.numpy(), grad.numpy(), rtol=1e-15)


def test_second_derivative_of_polygamma_is_polygamma():
    x = ug.tensor([0.7, 2.5], dtype=ug.float64, requires_grad=True)
    (g,) = ug.autograd.grad(ug.polygamma(1, x).sum(), [x], create_graph=True)
    (h,) = ug.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), torch.special.polygamma(3, torch.tensor([0.7, 2.5])).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name, call", [
    ("gammainc", lambda m, a, x: m.special.gammainc(a, x)),
    ("gammaincc", lambda m, a, x: m.special.gammaincc(a, x)),
    ("zeta", lambda m, a, x: m.special.zeta(a + 1.0, x)),
])
def test_derivatives_torch_lacks_raise_when_computed(name, call):
    for m in (torch, ug):
        a = m.tensor([1.5, 2.5], dtype=m.float64, requires_grad=True)
        x = m.tensor([0.5, 2.0], dtype=m.float64, requires_grad=True)
        y = call(m, a, x)  # the forward is fine: only the derivative is missing
        (gx,) = m.autograd.grad(call(m, a.detach(), x).sum(), [x])
        assert np.isfinite(gx.numpy()).all()
        with pytest.raises(RuntimeError, match="derivative for .* is not implemented"):
            m.autograd.grad(y.sum(), [a])


def test_scalar_arguments():
    # zeta and xlog1py take a number for either argument, gammainc and gammaincc for neither.
    t = Arg(np.array([0.5, 3.0], np.float32))
    check(lambda m, q: m.special.zeta(2.5, q), t)
    check(lambda m, q: m.special.xlog1py(q, 2), t)
    check(lambda m, q: m.special.gammainc(2.5, q), t)
    check(lambda m, q: m.special.gammaincc(q, 2.5), t)
    with pytest.raises(TypeError, match=r"\[zeta\] needs a tensor"):
        ug.special.zeta(1.0, 2.0)
