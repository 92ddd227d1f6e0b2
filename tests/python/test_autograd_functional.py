"""ug.autograd.functional and ug.autograd.forward_ad against torch 2.13's: the same functions,
inputs and vectors in float64, results compared within 1e-12 relative (each result is a few
roundings of the same derivative rules; no sum longer than 4 terms), structures (tensor or
tuple, nested tuples for jacobian and hessian) equal, and torch's errors raised where torch
raises them."""
import numpy as np
import pytest
import torch

import unigrad as ug
from unigrad.autograd import forward_ad as fwAD
from unigrad.autograd import functional as F

RTOL = 1e-12


def arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-1.5, 1.5, s) for s in shapes)


def to(m, arrs):
    return tuple(m.tensor(a) for a in arrs)


def same(got, want):
    """Equal structure and values (tuples nested as torch nests them; torch's vectorized
    forward mode gives some levels as lists)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(want), (type(got), got, want)
        for g, w in zip(got, want):
            same(g, w)
        return
    assert isinstance(got, ug.Tensor) and tuple(got.shape) == tuple(want.shape), (got, want)
    w = want.detach().numpy()
    assert np.abs(got.detach().numpy() - w).max(initial=0) <= RTOL * (1 + np.abs(w).max(initial=0))


# (function of m, the inputs' shapes): single and tuple inputs and outputs
FUNCS = {
    "one_to_one": (lambda m: lambda x: (x.sin() * x).exp(), [(2, 3)]),
    "one_to_tuple": (lambda m: lambda x: (x.tanh(), (x * x).sum(0)), [(3,)]),
    "tuple_to_one": (lambda m: lambda x, y: (x @ y).cos(), [(2, 3), (3, 2)]),
    "tuple_to_tuple": (lambda m: lambda x, y: (x * y.sum(), m.sigmoid(x) + y.mean()), [(4,), (2, 2)]),
    "scalar": (lambda m: lambda x: (x ** 3).sum(), [(3,)]),
}


def call(fn_name, m):
    make, shapes = FUNCS[fn_name]
    arrs = arrays(*shapes, seed=len(fn_name))
    ins = to(m, arrs)
    return make(m), (ins if len(ins) > 1 else ins[0])


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_as_torch(name, vectorize):
    f, x = call(name, ug)
    tf, tx = call(name, torch)
    same(F.jacobian(f, x, vectorize=vectorize), torch.autograd.functional.jacobian(tf, tx, vectorize=vectorize))


@pytest.mark.parametrize("name", ["one_to_one", "tuple_to_tuple"])
def test_jacobian_forward_mode_as_torch(name):
    f, x = call(name, ug)
    tf, tx = call(name, torch)
    same(F.jacobian(f, x, vectorize=True, strategy="forward-mode"),
         torch.autograd.functional.jacobian(tf, tx, vectorize=True, strategy="forward-mode"))


@pytest.mark.parametrize("name", FUNCS)
def test_vjp_and_jvp_as_torch(name):
    f, x = call(name, ug)
    tf, tx = call(name, torch)
    tout = tf(*tx) if isinstance(tx, tuple) else tf(tx)
    rng = np.random.default_rng(7)
    tv = tuple(torch.tensor(rng.uniform(-1, 1, tuple(o.shape))) for o in (tout if isinstance(tout, tuple) else (tout,)))
    tv = tv if isinstance(tout, tuple) else tv[0]
    v = tuple(ug.tensor(t.numpy()) for t in tv) if isinstance(tv, tuple) else ug.tensor(tv.numpy())
    same(F.vjp(f, x, v), torch.autograd.functional.vjp(tf, tx, tv))
    tu = tuple(torch.tensor(rng.uniform(-1, 1, tuple(a.shape))) for a in (tx if isinstance(tx, tuple) else (tx,)))
    tu = tu if isinstance(tx, tuple) else tu[0]
    u = tuple(ug.tensor(t.numpy()) for t in tu) if isinstance(tu, tuple) else ug.tensor(tu.numpy())
    same(F.jvp(f, x, u), torch.autograd.functional.jvp(tf, tx, tu))


SCALAR_FUNCS = {
    "one": (lambda m: lambda x: (x.sin() ** 2 * x.exp()).sum(), [(2, 2)]),
    "two": (lambda m: lambda x, y: ((x @ y) ** 2).sum() + (x * x).mean(), [(2, 3), (3, 2)]),
}


@pytest.mark.parametrize("name", SCALAR_FUNCS)
@pytest.mark.parametrize("vectorize,strategy", [(False, "reverse-mode"), (True, "reverse-mode"),
                                                (True, "forward-mode")])
def test_hessian_vhp_hvp_as_torch(name, vectorize, strategy):
    make, shapes = SCALAR_FUNCS[name]
    arrs = arrays(*shapes, seed=3)
    x, tx = to(ug, arrs), to(torch, arrs)
    x, tx = (x, tx) if len(arrs) > 1 else (x[0], tx[0])
    same(F.hessian(make(ug), x, vectorize=vectorize, outer_jacobian_strategy=strategy),
         torch.autograd.functional.hessian(make(torch), tx, vectorize=vectorize, outer_jacobian_strategy=strategy))
    (v,) = arrays(*[s for s in shapes[:1]], seed=4)
    vs = (v,) + tuple(np.ones(s) for s in shapes[1:])
    uv, tv = to(ug, vs), to(torch, vs)
    uv, tv = (uv, tv) if len(vs) > 1 else (uv[0], tv[0])
    same(F.vhp(make(ug), x, uv), torch.autograd.functional.vhp(make(torch), tx, tv))
    same(F.hvp(make(ug), x, uv), torch.autograd.functional.hvp(make(torch), tx, tv))


def test_create_graph_results_differentiate_again():
    (a,) = arrays((3,), seed=9)
    x, tx = ug.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for fn, tfn in [(F.jacobian, torch.autograd.functional.jacobian)]:
        j = fn(lambda t: t.sin() * t.sum(), x, create_graph=True)
        tj = tfn(lambda t: t.sin() * t.sum(), tx, create_graph=True)
        assert j.requires_grad
        (g,) = ug.autograd.grad(j.sum(), x)
        (tg,) = torch.autograd.grad(tj.sum(), tx)
        same(g, tg)
    _, hv = F.hvp(lambda t: (t ** 4).sum(), x, ug.ones_like(x), create_graph=True)
    _, thv = torch.autograd.functional.hvp(lambda t: (t ** 4).sum(), tx, torch.ones_like(tx), create_graph=True)
    same(ug.autograd.grad(hv.sum(), x)[0], torch.autograd.grad(thv.sum(), tx)[0])
    # without create_graph the results are detached, the caller's graph untouched
    out, grads = F.vjp(lambda t: t * 2, x, ug.ones_like(x))
    assert not out.requires_grad and not grads.requires_grad and x.grad is None


def test_independent_outputs_give_zeros_or_raise_in_strict_mode():
    x, y = ug.ones(2, dtype=ug.float64), ug.ones(3, dtype=ug.float64)
    jx, jy = F.jacobian(lambda a, b: a * 2, (x, y))
    assert jy.tolist() == [[0.0] * 3] * 2 and jx.tolist() == [[2.0, 0.0], [0.0, 2.0]]
    with pytest.raises(RuntimeError, match=r"\[autograd.functional.jacobian\] output 0 of the user-provided function "
                                           r"is independent of input 1"):
        F.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match=r"\[autograd.functional.vjp\] output 0 .* does not require gradients"):
        F.vjp(lambda a: ug.ones(2), x, ug.ones(2), strict=True)
    with pytest.raises(RuntimeError, match=r"\[autograd.functional.vjp\] the output of the user-provided function "
                                           r"is independent of input 1"):
        F.vjp(lambda a, b: a * 2, (x, y), ug.ones(2, dtype=ug.float64), strict=True)
    assert F.vjp(lambda a, b: a * 2, (x, y), ug.ones(2, dtype=ug.float64))[1][1].tolist() == [0.0] * 3


def test_errors_name_the_function():
    x = ug.ones(3, dtype=ug.float64)
    with pytest.raises(RuntimeError, match=r"\[autograd.functional.vjp\] v can only be None if the output"):
        F.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"\[autograd.functional.jvp\] v can only be None if the input"):
        F.jvp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"\[autograd.functional.vjp\] mismatch in shape: v has shape \[2\] "
                                           r"where \[3\] is expected"):
        F.vjp(lambda a: a * 2, x, ug.ones(2))
    with pytest.raises(TypeError, match=r"\[autograd.functional.jacobian\] expected inputs\[1\] to be a Tensor, "
                                        r"got list"):
        F.jacobian(lambda a, b: a, (x, [1.0]))
    with pytest.raises(RuntimeError, match=r"\[autograd.functional.hessian\] the Tensor the function returns must "
                                           r"have a single element, got shape \[3\]"):
        F.hessian(lambda a: a * 2, x)
    with pytest.raises(NotImplementedError, match=r'strategy="forward-mode" needs vectorize=True'):
        F.jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(RuntimeError, match=r"strict=True and vectorize=True are not supported together"):
        F.jacobian(lambda a: a, x, strict=True, vectorize=True)
    # a function of one element: v may be omitted, as torch allows
    same(F.jvp(lambda a: a.exp() * 3, ug.tensor([0.5], dtype=ug.float64))[1],
         torch.autograd.functional.jvp(lambda a: a.exp() * 3, torch.tensor([0.5], dtype=torch.float64))[1])


def test_forward_ad_as_torch():
    (a, t) = arrays((3, 2), (3, 2), seed=11)
    with fwAD.dual_level():
        d = fwAD.make_dual(ug.tensor(a), ug.tensor(t))
        out = (d.sin() @ d.mT).tanh().sum(0)
        primal, tangent = fwAD.unpack_dual(out)
        assert fwAD.unpack_dual(primal).tangent is None  # the primal is a plain view
    with torch.autograd.forward_ad.dual_level():
        td = torch.autograd.forward_ad.make_dual(torch.tensor(a), torch.tensor(t))
        want = torch.autograd.forward_ad.unpack_dual((td.sin() @ td.mT).tanh().sum(0))
    same((primal, tangent), (want.primal, want.tangent))
    assert fwAD.unpack_dual(out).tangent is None  # the level is closed: no tangent


def test_forward_ad_levels_nest_and_compose_with_backward():
    x = ug.tensor([0.3, -0.7], dtype=ug.float64, requires_grad=True)
    with fwAD.dual_level() as outer:
        d = fwAD.make_dual(x, ug.tensor([1.0, 0.0], dtype=ug.float64))
        with fwAD.dual_level() as inner:
            assert inner != outer
            e = fwAD.make_dual(d, ug.tensor([0.0, 1.0], dtype=ug.float64))
            y = (e.exp() * e).sum()
            assert fwAD.unpack_dual(y, level=outer).tangent.item() == pytest.approx(
                float((x[0].exp() * (x[0] + 1)).item()), rel=1e-15)
            assert fwAD.unpack_dual(y).tangent.item() == pytest.approx(float((x[1].exp() * (x[1] + 1)).item()),
                                                                       rel=1e-15)
        # reverse mode through the tangent: d/dx of the directional derivative along e0
        (g,) = ug.autograd.grad(fwAD.unpack_dual((d.exp() * d).sum()).tangent, x)
    assert g.tolist() == pytest.approx([float(x[0].exp() * (x[0] + 2)), 0.0], rel=1e-15)


def test_forward_ad_errors():
    x = ug.ones(2)
    with pytest.raises(RuntimeError, match=r"\[forward_ad.make_dual\] needs an open dual level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match=r"\[forward_ad.make_dual\] the tangent must have the primal's shape "
                                             r"and dtype: primal \[2\] float32, tangent \[3\] float32"):
            fwAD.make_dual(x, ug.ones(3))
        with pytest.raises(TypeError, match=r"\[forward_ad.make_dual\] expected a floating-point or complex primal, got int64"):
            fwAD.make_dual(ug.ones(2, dtype=ug.int64), ug.ones(2, dtype=ug.int64))
    with pytest.raises(RuntimeError, match=r"\[forward_ad.exit_dual_level\] no dual level is open"):
        fwAD.exit_dual_level()
