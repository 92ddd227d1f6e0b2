"""Gradients at the points where a derivative is a convention, against torch's documented
subgradients: clamp on its bounds, norm and std of zeros, cumprod through zeros, x ** 0 and
0 ** y, fmod at 0 and atan2(0, 0). Each is checked at those points and at ordinary random ones
(value, gradient, and the second derivative there), in reverse and forward mode; and
as_strided's default offset on a view."""
import numpy as np
import pytest
import torch

import unigrad as ug

INF, NAN = float("inf"), float("nan")


def _weights(shape, seed):
    """Positive weights for an output, so that each element's gradient is told apart."""
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


def _derivatives(m, f, arrays, second):
    """f's value, the gradient of sum(w * f) in each input and, if second, the gradient of
    sum(v * that gradient): all float64 numpy arrays."""
    xs = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
    out = f(m, *xs)
    total = (out * m.tensor(_weights(tuple(out.shape), 0))).sum()
    grads = m.autograd.grad(total, xs, create_graph=second, allow_unused=True)
    grads = [m.zeros_like(x) if g is None else g for g, x in zip(grads, xs)]
    results = [out, *grads]
    if second:
        terms = [(g * m.tensor(_weights(tuple(g.shape), 1 + i))).sum() for i, g in enumerate(grads) if g.requires_grad]
        seconds = m.autograd.grad(sum(terms), xs, allow_unused=True) if terms else [None] * len(xs)
        results += [m.zeros_like(x) if s is None else s for s, x in zip(seconds, xs)]
    return [r.detach().numpy(force=True) if m is torch else r.detach().numpy() for r in results]


def _tangents(m, f, arrays):
    """f's value and its tangent along fixed directions (forward mode)."""
    primals = tuple(m.tensor(a, dtype=m.float64) for a in arrays)
    tangents = tuple(m.tensor(_weights(a.shape, 7 + i) - 1.0) for i, a in enumerate(arrays))
    jvp = torch.func.jvp if m is torch else ug.jvp
    return [r.detach().numpy() for r in jvp(lambda *xs: f(m, *xs), primals, tangents)]


def check(f, *arrays, second=False, forward=True):
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    expected, actual = _derivatives(torch, f, arrays, second), _derivatives(ug, f, arrays, second)
    names = ["value"] + [f"grad {i}" for i in range(len(arrays))] + [f"second {i}" for i in range(len(arrays))]
    for name, e, a in zip(names, expected, actual):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=name)
    if forward:
        for name, e, a in zip(["value", "tangent"], _tangents(torch, f, arrays), _tangents(ug, f, arrays)):
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=name)


def rand(*shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


# ---- clamp / clip: the bounds take x's gradient (1, not the 0.5 of maximum and minimum) ----

AT_BOUNDS = [0.0, -1.0, 2.0, 3.0, 1.0, NAN]
CLAMPS = {
    "both": lambda m, x: x.clamp(0.0, 2.0),
    "function": lambda m, x: m.clamp(x, 0.0, 2.0),
    "min": lambda m, x: m.clamp(x, min=0.0),
    "max": lambda m, x: x.clamp(max=2.0),
    "clip": lambda m, x: x.clip(0.0, 2.0),
    "inplace": lambda m, x: x.clone().clamp_(0.0, 2.0),
    "empty range": lambda m, x: x.clamp(2.0, 0.0),
    "one point": lambda m, x: x.clamp(2.0, 2.0),
}


@pytest.mark.parametrize("form", CLAMPS)
def test_clamp_gradient_on_the_bounds_is_1(form):
    check(CLAMPS[form], AT_BOUNDS)


@pytest.mark.parametrize("form", CLAMPS)
def test_clamp_at_random_points(form):
    check(CLAMPS[form], rand(3, 4), second=True)


# x, min, max: ties of x with each bound, min == max, min > max, NaN
X_BOUNDS = [0.0, 2.0, 1.0, -1.0, 5.0, 1.0, 3.0, 0.5, NAN, 1.0]
MIN_BOUNDS = [0.0, 0.0, 1.0, 1.0, 1.0, 3.0, 3.0, 0.5, 0.0, NAN]
MAX_BOUNDS = [2.0, 2.0, 1.0, 1.0, 1.0, 2.0, 2.0, 0.5, 2.0, 2.0]
TENSOR_CLAMPS = {
    "both": lambda m, x, lo, hi: x.clamp(lo, hi),
    "function": lambda m, x, lo, hi: m.clamp(x, lo, hi),
    "min": lambda m, x, lo, hi: x.clamp(min=lo) * hi,
    "max": lambda m, x, lo, hi: m.clamp(x, max=hi) * lo,
    "broadcast": lambda m, x, lo, hi: x.reshape(2, 5).clamp(lo[:5], hi[:5].reshape(1, 5)),
}


@pytest.mark.parametrize("form", TENSOR_CLAMPS)
def test_clamp_with_tensor_bounds_routes_the_gradient_as_torch(form):
    # torch's forward-mode rule gives ties to the bound (clamp_jvp), its reverse mode to x:
    # unigrad's tangents follow its reverse mode, so only the gradients are compared here.
    check(TENSOR_CLAMPS[form], X_BOUNDS, MIN_BOUNDS, MAX_BOUNDS, forward=False)


@pytest.mark.parametrize("form", TENSOR_CLAMPS)
def test_clamp_with_tensor_bounds_at_random_points(form):
    x, lo = rand(10, seed=1), rand(10, seed=2, low=-1.5, high=0.0)
    check(TENSOR_CLAMPS[form], x, lo, lo + rand(10, seed=3, low=0.5, high=2.0), second=True)


# ---- norms of zeros: gradient 0, not NaN ----

ROWS = [[0.0, 0.0, 0.0], [1.0, 0.0, -2.0], [0.0, 0.0, 0.0]]
ORDERS = [1, 2, 3, 0.5, 1.5, INF, -INF]


@pytest.mark.parametrize("p", ORDERS)
def test_norm_of_zeros_has_gradient_0(p):
    check(lambda m, x: x.norm(p), np.zeros(3))
    check(lambda m, x: m.linalg.vector_norm(x, p, dim=1), ROWS)
    check(lambda m, x: m.linalg.vector_norm(x, p, dim=0, keepdim=True), np.zeros((2, 3)))
    check(lambda m, x: m.linalg.norm(x, p, dim=1), ROWS)


def test_norm_forms_of_zeros_have_gradient_0():
    check(lambda m, x: x.norm(), np.zeros(3))
    check(lambda m, x: m.linalg.norm(x, dim=1), ROWS)
    check(lambda m, x: m.linalg.norm(x), np.zeros((2, 3)))
    check(lambda m, x: m.linalg.matrix_norm(x), np.zeros((2, 3)))
    check(lambda m, x, y: m.dist(x, y), rand(3), rand(3))  # not 0: the ordinary case
    x = rand(3)
    check(lambda m, a, b: m.dist(a, b), x, x)
    check(lambda m, a, b: m.dist(a, b, 3), x, x)


@pytest.mark.parametrize("p", ORDERS)
def test_norm_at_random_points(p):
    check(lambda m, x: m.linalg.vector_norm(x, p, dim=1), rand(3, 4), second=True)
    check(lambda m, x: x.norm(p), rand(5, seed=4), second=True)


# ---- cumprod through zeros: the exact gradient, not a division by the zero ----

CUMPRODS = [
    ([2.0, 0.0, 3.0, 4.0], 0),
    ([2.0, 0.0, 3.0, 0.0, 4.0], 0),
    ([0.0, 0.0, 5.0], 0),
    ([1.5, 2.0, 3.0, 0.0], -1),
    ([0.0], 0),
    ([[2.0, 0.0, 3.0], [0.0, 4.0, 5.0], [1.0, 2.0, 3.0], [6.0, 7.0, 0.0]], 1),
    ([[2.0, 0.0, 3.0], [0.0, 4.0, 5.0], [1.0, 2.0, 3.0], [6.0, 0.0, 0.0]], 0),
    ([[[1.0, 0.0], [2.0, 3.0], [0.0, 4.0]], [[5.0, 6.0], [7.0, 0.0], [8.0, 9.0]]], 1),
]


@pytest.mark.parametrize("x,dim", CUMPRODS)
def test_cumprod_gradient_through_zeros_is_exact(x, dim):
    check(lambda m, t: t.cumprod(dim), x)
    check(lambda m, t: m.cumprod(t * 1.0, dim=dim).sum(dim) if t.dim() > 1 else t.cumprod(dim), x)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cumprod_at_random_points(dim):
    check(lambda m, t: t.cumprod(dim), rand(3, 4, 5, seed=5), second=True)


# ---- std of a constant: gradient 0, not NaN ----

STDS = {
    "std": lambda m, x: x.std(),
    "std dim": lambda m, x: x.std(dim=1),
    "std correction 0": lambda m, x: x.std(dim=1, correction=0, keepdim=True),
    "var": lambda m, x: x.var(),
    "var dim": lambda m, x: x.var(dim=1),
}


@pytest.mark.parametrize("form", STDS)
def test_std_of_a_constant_has_gradient_0(form):
    check(STDS[form], [[1.0, 1.0, 1.0], [1.0, 2.0, 4.0], [-3.0, -3.0, -3.0]])


@pytest.mark.parametrize("form", STDS)
def test_std_at_random_points(form):
    check(STDS[form], rand(3, 4, seed=6), second=True)


# ---- pow at 0: d(x ** 0)/dx is 0; d(0 ** y)/dy is 0 for y >= 0 ----


def test_pow_with_exponent_0_has_gradient_0_at_0():
    check(lambda m, x: x**0, [0.0, 2.0, -1.0])
    check(lambda m, x: x**0.0, [0.0, 2.0, -1.0])
    check(lambda m, x: m.pow(x, 0), [0.0, 2.0])


def test_pow_of_tensors_at_0_as_torch():
    # base gradient 0 where y == 0; exponent gradient 0 at x == 0 for y >= 0, -inf for y < 0
    check(lambda m, x, y: x**y, [0.0, 0.0, 0.0, 0.0, 2.0, -1.0], [0.0, 1.0, -1.0, 0.5, 0.0, 2.0])
    check(lambda m, y: m.pow(0.0, y), [0.0, 1.0, -1.0, 2.0])


def test_pow_at_random_points():
    check(lambda m, x, y: x**y, rand(3, 4, seed=7, low=0.2), rand(3, 4, seed=8), second=True)
    check(lambda m, x: x**3, rand(3, 4, seed=9), second=True)
    check(lambda m, y: m.pow(2.0, y), rand(5, seed=10), second=True)


# ---- fmod and remainder: the gradient in x is 1 everywhere, also at x = 0 ----

X_MOD = [0.0, -0.0, 1.0, -3.0, 5.0, 2.5, 0.0]
Y_MOD = [1.5, 1.5, 0.0, 2.0, -2.0, -1.0, -1.5]


@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_fmod_gradient_at_0_is_1(name):
    check(lambda m, x: getattr(m, name)(x, 1.5), X_MOD)
    check(lambda m, x: getattr(x, name)(-1.5), X_MOD)
    check(lambda m, x, y: getattr(m, name)(x, y), X_MOD, Y_MOD)


@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_fmod_at_random_points(name):
    check(lambda m, x, y: getattr(m, name)(x, y), rand(3, 4, seed=11, high=5), rand(3, 4, seed=12, low=0.5), second=True)


def test_fmod_keeps_the_sign_of_negative_zero():
    np.testing.assert_array_equal(np.signbit(ug.fmod(ug.tensor([-0.0, 0.0]), 1.5).numpy()), [True, False])


# ---- atan2: gradient 0 at (0, 0) (and wherever 1 / (y^2 + x^2) overflows) ----


def test_atan2_gradient_at_origin_is_0():
    # torch's forward-mode rule divides by y^2 + x^2 unmasked (NaN at the origin); unigrad's
    # tangents follow its reverse mode, so only the gradients are compared.
    check(lambda m, y, x: m.atan2(y, x), [0.0, 1.0, 0.0, 1e-30, 1e-200, -0.0], [0.0, 0.0, 1.0, 0.0, 0.0, -0.0],
          forward=False)
    check(lambda m, y: m.atan2(y, m.zeros(2, dtype=m.float64)), [0.0, 1.0], forward=False)


def test_atan2_float32_gradient_where_the_reciprocal_overflows():
    grads = []
    for m in (torch, ug):
        y = m.tensor([0.0, 1e-30, 1.0], requires_grad=True)
        x = m.tensor([0.0, 0.0, 2.0], requires_grad=True)
        m.atan2(y, x).sum().backward()
        grads.append(np.concatenate([y.grad.numpy(), x.grad.numpy()]))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_atan2_at_random_points():
    check(lambda m, y, x: m.atan2(y, x), rand(3, 4, seed=13), rand(3, 4, seed=14), second=True)


# ---- as_strided: the default offset is the tensor's own ----

AS_STRIDED = {
    "view": lambda m: m.arange(10.0)[2:].as_strided((2, 2), (1, 2)),
    "function": lambda m: m.as_strided(m.arange(10.0)[2:], (2,), (1,)),
    "row": lambda m: m.arange(12.0).reshape(3, 4)[1].as_strided((2,), (2,)),
    "explicit 0": lambda m: m.arange(10.0)[2:].as_strided((2, 2), (1, 2), 0),
    "explicit": lambda m: m.arange(10.0)[2:].as_strided((3,), (2,), storage_offset=3),
}


@pytest.mark.parametrize("form", AS_STRIDED)
def test_as_strided_defaults_to_the_views_offset(form):
    np.testing.assert_array_equal(AS_STRIDED[form](ug).numpy(), AS_STRIDED[form](torch).numpy())


def test_as_strided_of_a_view_under_jvp():
    # unigrad refuses reverse mode through as_strided; forward mode takes the tangent's view
    def f(a):
        return a[2:].as_strided((2, 2), (1, 2))

    x, t = np.arange(10.0), np.arange(10.0) * 10
    _, expected = torch.func.jvp(f, (torch.tensor(x),), (torch.tensor(t),))
    _, actual = ug.jvp(f, (ug.tensor(x),), (ug.tensor(t),))
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())


def test_as_strided_refuses_a_negative_offset():
    with pytest.raises(Exception, match=r"\[as_strided\] negative storage offset -1"):
        ug.arange(4.0).as_strided((2,), (1,), -1)
