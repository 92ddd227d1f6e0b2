"""torch's signatures for div(rounding_mode=), round(decimals=), frexp, gcd, lcm, clamp_min /
clamp_max, comparisons with other types, linalg.cross, norm(p="nuc") and movedim with
sequences: values, dtypes, gradients and errors against torch on concrete inputs."""
import numpy as np
import pytest
import torch

import unigrad as ug

FLOATS = ["float32", "float64"]


def both(values, dtype, requires_grad=False):
    t = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    u = ug.tensor(values, dtype=getattr(ug, dtype), requires_grad=requires_grad)
    return t, u


def same(u, t, exact=True):
    assert str(u.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(u.shape) == tuple(t.shape)
    got, want = u.detach().numpy(), t.detach().numpy()
    if exact:
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- div(rounding_mode=)
A = [7.0, -7.0, 5.5, -5.5, 0.5, -0.5, 0.0, 3.0]
B = [2.0, 2.0, -2.0, 2.0, -1.0, 1.0, -1.0, 0.0]


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_div_rounding_floats(mode, dtype):
    (ta, ua), (tb, ub) = both(A, dtype, True), both(B, dtype)
    t, u = torch.div(ta, tb, rounding_mode=mode), ug.div(ua, ub, rounding_mode=mode)
    same(u, t)
    same(ua.div(ub, rounding_mode=mode), ta.div(tb, rounding_mode=mode))
    same(ug.div(ua, 2.5, rounding_mode=mode), torch.div(ta, 2.5, rounding_mode=mode))
    t.sum().backward()
    u.sum().backward()
    same(ua.grad, ta.grad, exact=False)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_div_rounding_integers_keep_dtype(mode, dtype):
    a = [7, -7, 5, -6, 0, 100] if dtype != "uint8" else [7, 200, 5, 6, 0, 100]
    (ta, ua), (tb, ub) = both(a, dtype), both([2, 2, -3, 4, 5, 7] if dtype != "uint8" else [2, 3, 3, 4, 5, 7], dtype)
    same(ug.div(ua, ub, rounding_mode=mode), torch.div(ta, tb, rounding_mode=mode))
    same(ua.div(3, rounding_mode=mode), ta.div(3, rounding_mode=mode))
    same(ug.div(ua, 2.5, rounding_mode=mode), torch.div(ta, 2.5, rounding_mode=mode))  # a float result
    same(ug.div(ua, ub), torch.div(ta, tb))  # true division: float32
    tc, uc = ta.clone(), ua.clone()
    same(uc.div_(ub, rounding_mode=mode), tc.div_(tb, rounding_mode=mode))
    same(uc, tc)


def test_div_int8_overflow_wraps_as_torch():
    (ta, ua) = both([-128], "int8")
    same(ug.div(ua, -1, rounding_mode="trunc"), torch.div(ta, -1, rounding_mode="trunc"))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_rounding_errors(mode):
    a = ug.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"\[div\] ZeroDivisionError"):
        ug.div(a, ug.tensor([1, 0]), rounding_mode=mode)
    with pytest.raises(RuntimeError, match=r"\[div\] ZeroDivisionError"):
        a.div(0, rounding_mode=mode)
    with pytest.raises(RuntimeError, match="rounding_mode must be None, 'trunc' or 'floor', got 'round'"):
        ug.div(a, 2, rounding_mode="round")
    with pytest.raises(RuntimeError, match="div_"):
        a.clone().div_(2)  # a float quotient into an integer tensor, as torch refuses
    # floats divide by zero to inf, as torch
    same(ug.div(ug.tensor([1.0, -1.0]), 0.0, rounding_mode=mode),
         torch.div(torch.tensor([1.0, -1.0]), 0.0, rounding_mode=mode))


# ---- round(decimals=)
@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("dtype", FLOATS)
def test_round_decimals(decimals, dtype):
    values = [0.5, 1.5, 2.5, -0.5, 1.25, 1.35, 1234.5, 15.0, 25.0, 150.0, -0.04, 0.125]
    (t, u) = both(values, dtype, True)
    rt, ru = torch.round(t, decimals=decimals), ug.round(u, decimals=decimals)
    same(ru, rt)
    same(u.round(decimals=decimals), t.round(decimals=decimals))
    rt.sum().backward()
    ru.sum().backward()
    same(u.grad, t.grad)
    tc, uc = t.detach().clone(), u.detach().clone()
    same(uc.round_(decimals=decimals), tc.round_(decimals=decimals))


def test_round_integers():
    same(ug.round(ug.tensor([15, 25])), torch.round(torch.tensor([15, 25])))  # no decimals: a copy
    with pytest.raises(RuntimeError, match=r"\[round\] decimals needs a floating tensor"):
        ug.round(ug.tensor([15, 25]), decimals=1)


# ---- frexp, gcd, lcm
@pytest.mark.parametrize("dtype", FLOATS + ["float16"])
def test_frexp(dtype):
    values = [0.0, -0.0, 1.0, -3.0, 0.75, float("inf"), float("-inf"), float("nan"), 1e-40, 2 - 2**-23, 1024.0,
              0.1, -7.5e7]
    if dtype == "float16":
        values = [v for v in values if v != 1e-40 and v != -7.5e7]
    if dtype == "float64":
        values += [5e-324, 2.0**1023, 1 - 2**-53]
    (t, u) = both(values, dtype, dtype != "float16")
    tm, te = torch.frexp(t)
    um, ue = ug.frexp(u)
    same(um, tm)
    same(ue, te)
    assert u.frexp().mantissa is not None and ug.frexp(u).exponent.dtype == ug.int32
    if dtype != "float16":
        # torch's gradient, grad / 2^e, overflows 2^1024 to 0 at 2^1023: unigrad's is 2^-1024
        finite = torch.isfinite(t) & (t.abs() < 1e300)
        (tm[finite] * 3).sum().backward()
        (um * ug.tensor(finite.numpy()) * 3).sum().backward()
        same(u.grad, t.grad)


def test_frexp_rejects_integers():
    with pytest.raises(RuntimeError, match=r"\[frexp\] needs a floating tensor"):
        ug.frexp(ug.tensor([1, 2]))


@pytest.mark.parametrize("op", ["gcd", "lcm"])
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_gcd_lcm(op, dtype):
    signed = dtype != "uint8"
    a = [12, -12, 0, 0, 7, 9, 13, 21] if signed else [12, 12, 0, 0, 7, 9, 13, 21]
    b = [[8], [-18]] if signed else [[8], [18]]
    (ta, ua), (tb, ub) = both(a, dtype), both(b, dtype)
    same(getattr(ug, op)(ua, ub), getattr(torch, op)(ta, tb))
    same(getattr(ua, op)(ub), getattr(ta, op)(tb))
    tc, uc = ta.clone(), ua.clone()
    same(getattr(uc, op + "_")(ub[0]), getattr(tc, op + "_")(tb[0]))


def test_gcd_worst_case_and_promotion():
    # neighbouring Fibonacci numbers take the most steps
    fib = [1, 2]
    while fib[-1] < 2**62:
        fib.append(fib[-1] + fib[-2])
    ta, tb = torch.tensor(fib[1:]), torch.tensor(fib[:-1])
    same(ug.gcd(ug.tensor(fib[1:]), ug.tensor(fib[:-1])), torch.gcd(ta, tb))
    same(ug.gcd(ug.tensor([12], dtype=ug.int8), ug.tensor([8], dtype=ug.int32)),
         torch.gcd(torch.tensor([12], dtype=torch.int8), torch.tensor([8], dtype=torch.int32)))


@pytest.mark.parametrize("op", ["gcd", "lcm"])
def test_gcd_lcm_reject_floats_and_bools(op):
    for dtype in (ug.float32, ug.bool):
        with pytest.raises(RuntimeError, match=rf"\[{op}\] needs integer tensors"):
            getattr(ug, op)(ug.tensor([1, 2], dtype=dtype), ug.tensor([1, 2], dtype=dtype))


# ---- clamp_min, clamp_max
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_clamp_min_max(name, dtype):
    values = [-2.0, -0.5, 0.0, 0.5, 1.0, 3.0]
    for bound_t, bound_u in [(0.5, 0.5), both([0.0, 0.0, 1.0, 1.0, 1.0, 2.0], dtype)]:
        (t, u) = both(values, dtype, True)
        rt, ru = getattr(torch, name)(t, bound_t), getattr(ug, name)(u, bound_u)
        same(ru, rt)
        same(getattr(u, name)(bound_u), getattr(t, name)(bound_t))
        (rt * torch.arange(6.0, dtype=rt.dtype)).sum().backward()
        (ru * ug.arange(6.0, dtype=ru.dtype)).sum().backward()
        same(u.grad, t.grad)
        tc, uc = t.detach().clone(), u.detach().clone()
        same(getattr(uc, name + "_")(bound_u), getattr(tc, name + "_")(bound_t))
        same(uc, tc)


def test_clamp_min_integers():
    (t, u) = both([-3, 0, 4], "int64")
    same(u.clamp_min(1), t.clamp_min(1))
    same(ug.clamp_max(u, 1), torch.clamp_max(t, 1))
    with pytest.raises(RuntimeError, match="clamp_min_"):
        u.clone().clamp_min_(0.5)  # a float result into an integer tensor


# ---- comparisons with other types
def test_comparison_with_other_types_is_not_an_error():
    t, u = torch.ones(2), ug.ones(2)
    for other in ("str", None, [1.0, 1.0], object()):
        assert (u == other) is (t == other) is False
        assert (u != other) is (t != other) is True
    assert u.__eq__("a") is NotImplemented
    with pytest.raises(TypeError, match="'<' not supported"):
        u < "a"  # noqa: B015
    same(u == 1.0, t == 1.0)
    same(u != ug.zeros(2), t != torch.zeros(2))


# ---- linalg.cross and cross
@pytest.mark.parametrize("dtype", FLOATS)
def test_linalg_cross_broadcasts_and_differentiates(dtype):
    (ta, ua) = both(np.arange(12.0).reshape(4, 3).tolist(), dtype, True)
    (tb, ub) = both([[1.0, -2.0, 0.5]], dtype, True)
    t, u = torch.linalg.cross(ta, tb), ug.linalg.cross(ua, ub)
    same(u, t)
    w = np.arange(12.0).reshape(4, 3)
    (t * torch.tensor(w, dtype=t.dtype)).sum().backward()
    (u * ug.tensor(w, dtype=u.dtype)).sum().backward()
    same(ua.grad, ta.grad)
    same(ub.grad, tb.grad)
    (tc, uc), (td, ud) = both(np.ones((3, 2)).tolist(), dtype), both([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], dtype)
    same(ug.linalg.cross(uc, ud, dim=0), torch.linalg.cross(tc, td, dim=0))
    same(ug.cross(uc, ud), torch.cross(tc, td))  # dim=None: the first dim of size 3
    same(uc.cross(ud, dim=0), tc.cross(td, dim=0))
    s1, s2 = np.arange(9.0).reshape(3, 3, 1), np.arange(9.0).reshape(3, 1, 3) - 4
    same(ug.cross(ug.tensor(s1, dtype=getattr(ug, dtype)), ug.tensor(s2, dtype=getattr(ug, dtype))),
         torch.cross(torch.tensor(s1, dtype=getattr(torch, dtype)), torch.tensor(s2, dtype=getattr(torch, dtype))))


def test_linalg_cross_integers_and_errors():
    same(ug.linalg.cross(ug.tensor([1, 2, 3]), ug.tensor([4, 5, 6])),
         torch.linalg.cross(torch.tensor([1, 2, 3]), torch.tensor([4, 5, 6])))
    with pytest.raises(RuntimeError, match=r"\[linalg.cross\] dim -1 must have length 3"):
        ug.linalg.cross(ug.ones(2, 4), ug.ones(2, 4))
    with pytest.raises(RuntimeError, match=r"\[linalg.cross\] a and b must have the same rank"):
        ug.linalg.cross(ug.ones(2, 3), ug.ones(3))
    with pytest.raises(RuntimeError, match="one dtype"):
        ug.linalg.cross(ug.ones(3), ug.ones(3, dtype=ug.float64))
    with pytest.raises(IndexError):
        ug.linalg.cross(ug.ones(3, 2), ug.ones(3, 2), dim=2)
    with pytest.raises(ValueError):
        ug.linalg.cross(ug.ones(2, 3), ug.ones(4, 3))
    with pytest.raises(RuntimeError, match=r"\[cross\] no dim of size 3"):
        ug.cross(ug.ones(2, 4), ug.ones(2, 4))


# ---- norm(p="nuc")
@pytest.mark.parametrize("dtype", FLOATS)
def test_norm_nuc(dtype):
    (t, u) = both([[7.0, -7.0], [1.25, 0.0]], dtype, True)
    nt, nu = torch.norm(t, p="nuc"), ug.norm(u, p="nuc")
    same(nu, nt, exact=False)
    same(u.norm(p="nuc", keepdim=True), t.norm(p="nuc", keepdim=True), exact=False)
    nt.backward()
    nu.backward()
    same(u.grad, t.grad, exact=False)
    (t3, u3) = both(np.arange(12.0).reshape(2, 2, 3).tolist(), dtype)
    same(ug.norm(u3, p="nuc", dim=(1, 2)), torch.norm(t3, p="nuc", dim=(1, 2)), exact=False)
    same(ug.norm(u3, p="nuc", dim=(0, 2), keepdim=True), torch.norm(t3, p="nuc", dim=(0, 2), keepdim=True),
         exact=False)
    same(ug.linalg.matrix_norm(u3, ord="nuc"), torch.linalg.matrix_norm(t3, ord="nuc"), exact=False)
    with pytest.raises(Exception, match="2"):
        ug.norm(u3, p="nuc")  # three dims: a matrix norm needs two, as torch


# ---- movedim with sequences
def test_movedim_sequences():
    t, u = torch.arange(24.0).reshape(2, 3, 4), ug.arange(24.0).reshape(2, 3, 4)
    for src, dst in [((0, 1), (2, 0)), ([0], [2]), ((-1, 0), (0, -1)), ((), ()), ((0, 1, 2), (2, 1, 0))]:
        same(u.movedim(src, dst), t.movedim(src, dst))
        same(ug.movedim(u, src, dst), torch.movedim(t, src, dst))
        same(ug.moveaxis(u, src, dst), torch.moveaxis(t, src, dst))
        same(u.moveaxis(src, dst), t.moveaxis(src, dst))
    same(u.movedim(0, 2), t.movedim(0, 2))
    g = ug.arange(24.0).reshape(2, 3, 4).requires_grad_()
    (g.movedim((0, 1), (2, 0)) * ug.arange(24.0).reshape(3, 4, 2)).sum().backward()
    tg = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()
    (tg.movedim((0, 1), (2, 0)) * torch.arange(24.0).reshape(3, 4, 2)).sum().backward()
    same(g.grad, tg.grad)


def test_movedim_errors():
    u = ug.ones(2, 3)
    with pytest.raises(RuntimeError, match="same number of dims"):
        u.movedim((0, 1), (0,))
    with pytest.raises(RuntimeError, match="repeated dim in source"):
        u.movedim((0, 0), (1, 0))
    with pytest.raises(RuntimeError, match="repeated dim in destination"):
        u.movedim((0, 1), (1, 1))
    with pytest.raises(IndexError):
        u.movedim((0, 5), (1, 0))
