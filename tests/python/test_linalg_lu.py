"""ug.linalg's LU family (lu_factor, lu, lu_unpack, lu_solve, the _ex forms), its compositions
(cond, householder_product, tensorinv, tensorsolve, vander, vecdot, diagonal, matmul) and
LinAlgError, against torch.linalg on random batched matrices of condition number 10.

Pivots must equal torch's: LAPACK's partial pivoting picks the same rows on these inputs (no
ties). Tolerances follow test_linalg.py's perturbation bounds; op_table.py checks the
differentiable ones under every transform (fd, jvp, vmap, jit) on small inputs.
"""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import K
from test_linalg import DTYPES, EPS, assert_within, conditioned, np64, pair

SHAPES = [(2, 5, 5), (3, 6, 4), (2, 4, 6), (4, 4)]  # square, tall, wide, unbatched
COND = 10.0


def allowed(dtype, n, scale=1.0):
    """K·n·eps·cond·scale: a backward-stable result's error on these inputs."""
    return K * n * EPS[dtype] * COND * scale


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_lu_and_lu_unpack_match_torch(shape, dtype):
    a, ta = pair(conditioned(shape, COND, seed=1), dtype)
    LU, piv = ug.linalg.lu_factor(a)
    tLU, tpiv = torch.linalg.lu_factor(ta)
    assert piv.dtype == ug.int32 and np.array_equal(piv.numpy(), tpiv.numpy())
    n = max(shape[-2:])
    assert_within(LU, tLU, allowed(dtype, n, 10), "lu_factor LU")
    P, L, U = ug.linalg.lu(a)
    tP, tL, tU = torch.linalg.lu(ta)
    assert np.array_equal(P.numpy(), tP.numpy())
    assert_within(L, tL, allowed(dtype, n, 10), "lu L")
    assert_within(U, tU, allowed(dtype, n, 10), "lu U")
    assert_within(P @ L @ U, ta, allowed(dtype, n), "P L U")
    uP, uL, uU = ug.lu_unpack(LU, piv)
    assert np.array_equal(uP.numpy(), tP.numpy()) and np.array_equal(uL.numpy(), L.numpy())
    assert type(ug.lu_unpack(LU, piv)).__name__ == "lu_unpack"
    _, eL, eU = ug.lu_unpack(LU, piv, unpack_data=False)
    assert eL.shape == eU.shape == (0,)
    assert ug.lu_unpack(LU, piv, unpack_pivots=False).P.shape == (0,)


def test_results_are_torchs_named_tuples():
    a, ta = pair(conditioned((3, 3), COND, seed=2), "float64")
    for ours, theirs in [(ug.linalg.lu_factor(a), torch.linalg.lu_factor(ta)),
                         (ug.linalg.lu_factor_ex(a), torch.linalg.lu_factor_ex(ta)),
                         (ug.linalg.lu(a), torch.linalg.lu(ta)),
                         (ug.linalg.inv_ex(a), torch.linalg.inv_ex(ta)),
                         (ug.linalg.solve_ex(a, a), torch.linalg.solve_ex(ta, ta)),
                         (ug.linalg.cholesky_ex(a @ a.mT), torch.linalg.cholesky_ex(ta @ ta.mT))]:
        assert type(ours).__name__ == type(theirs).__name__ and len(ours) == len(theirs)
        assert all(torch.equal(getattr(theirs, f), theirs[i]) for i, f in enumerate(ours._fields))


@pytest.mark.filterwarnings("ignore:torch.lu_solve is deprecated")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_matches_torch(left, adjoint, dtype):
    a, ta = pair(conditioned((3, 5, 5), COND, seed=3), dtype)
    b, tb = pair(conditioned((5, 2) if left else (2, 5), COND, seed=4), dtype)  # broadcast over A's batch
    LU, piv = ug.linalg.lu_factor(a)
    tLU, tpiv = torch.linalg.lu_factor(ta)
    x = ug.linalg.lu_solve(LU, piv, b, left=left, adjoint=adjoint)
    expected = torch.linalg.lu_solve(tLU, tpiv, tb.expand(3, *tb.shape), left=left, adjoint=adjoint)
    assert x.shape == tuple(expected.shape)
    assert_within(x, expected, allowed(dtype, 5, COND * float(expected.abs().max())), "lu_solve")
    # torch.lu_solve (deprecated): B first
    assert_within(ug.lu_solve(b if left else b.mT, LU, piv), torch.lu_solve(tb if left else tb.mT, tLU, tpiv),
                  allowed(dtype, 5, COND * float(expected.abs().max())), "torch.lu_solve")


def grads(fn, *inputs):
    """The gradients of sum(w * fn(inputs)) (fixed random w per output) w.r.t. each input."""
    outs = fn(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    rng = np.random.default_rng(9)
    total = 0
    for o in outs:
        w = rng.standard_normal(tuple(o.shape))
        total = total + (o * (torch.tensor(w) if isinstance(o, torch.Tensor) else ug.tensor(w))).sum()
    if isinstance(total, torch.Tensor):
        return torch.autograd.grad(total, inputs)
    return ug.autograd.grad(total, inputs)


def leaf(m, a):
    return torch.tensor(a, requires_grad=True) if m is torch else ug.tensor(a, requires_grad=True)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_gradients_match_torch(shape):
    a = conditioned(shape, COND, seed=5)
    n = max(shape[-2:])
    for name, fn in [("lu_factor", lambda m, x: m.linalg.lu_factor(x).LU),
                     ("lu", lambda m, x: tuple(m.linalg.lu(x))[1:])]:
        (expected,) = grads(lambda x: fn(torch, x), leaf(torch, a))
        (actual,) = grads(lambda x: fn(ug, x), leaf(ug, a))
        assert_within(actual, expected, allowed("float64", n, COND * 10 * float(expected.abs().max())), name)


def test_lu_solve_gradients_match_torch_for_lu_and_b():
    a, b = conditioned((2, 4, 4), COND, seed=6), conditioned((2, 4, 3), COND, seed=7)
    for left, adjoint in [(True, False), (True, True), (False, False)]:
        def fn(m, x, y):
            LU, piv = m.linalg.lu_factor(x)
            return m.linalg.lu_solve(LU, piv, y if left else y.mT, left=left, adjoint=adjoint)

        expected = grads(lambda x, y: fn(torch, x, y), leaf(torch, a), leaf(torch, b))
        actual = grads(lambda x, y: fn(ug, x, y), leaf(ug, a), leaf(ug, b))
        for e, g, what in zip(expected, actual, "AB"):
            assert_within(g, e, allowed("float64", 4, COND ** 2 * float(e.abs().max())), f"lu_solve grad {what}")
    # with respect to the factors themselves (torch's linalg_lu_solve_LU)
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    expected = grads(lambda x, y: torch.linalg.lu_solve(x, tpiv, y), tLU.requires_grad_(), leaf(torch, b))
    LU, piv = ug.linalg.lu_factor(ug.tensor(a))
    actual = grads(lambda x, y: ug.linalg.lu_solve(x, piv, y), ug.tensor(LU.numpy(), requires_grad=True),
                   leaf(ug, b))
    for e, g in zip(expected, actual):
        assert_within(g, e, allowed("float64", 4, COND ** 2 * float(e.abs().max())), "lu_solve grad LU")


@pytest.mark.parametrize("shape", [(4, 4), (3, 4), (4, 3)])
def test_lu_factor_gradient_matches_finite_differences(shape):
    a = conditioned(shape, COND, seed=8)
    w = np.random.default_rng(1).standard_normal(shape)

    def loss(x):
        return float((ug.linalg.lu_factor(ug.tensor(x)).LU.numpy() * w).sum())

    x = leaf(ug, a)
    (g,) = ug.autograd.grad((ug.linalg.lu_factor(x).LU * ug.tensor(w)).sum(), [x])
    h = 1e-6
    fd = np.zeros_like(a)
    for idx in np.ndindex(*a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        fd[idx] = (loss(a + e) - loss(a - e)) / (2 * h)
    assert np.allclose(g.numpy(), fd, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ex_forms_report_info_as_torch(dtype):
    a = conditioned((3, 4, 4), COND, seed=10)
    a[1, :, 2] = 0  # singular: U[3, 3] is exactly zero
    ua, ta = pair(a, dtype)
    LU, piv, info = ug.linalg.lu_factor_ex(ua)
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(ta)
    assert info.dtype == ug.int32 and np.array_equal(info.numpy(), tinfo.numpy()) and info.numpy()[1] > 0
    assert np.array_equal(ug.lu(ua, get_infos=True)[2].numpy(), tinfo.numpy())
    for op, call in [("linalg.inv_ex", lambda m, x: m.linalg.inv_ex(x)),
                     ("linalg.solve_ex", lambda m, x: m.linalg.solve_ex(x, x[..., 0]))]:
        res, info = call(ug, ua)
        tres, tinfo = call(torch, ta)
        assert np.array_equal(info.numpy(), tinfo.numpy()), op
        good = [0, 2]
        assert_within(res.numpy()[good], tres[good], allowed(dtype, 4, COND * 10), op)
    spd = np.stack([a[0] @ a[0].T, -np.eye(4), a[2] @ a[2].T])
    us, ts = pair(spd, dtype)
    L, info = ug.linalg.cholesky_ex(us)
    tL, tinfo = torch.linalg.cholesky_ex(ts)
    assert np.array_equal(info.numpy(), tinfo.numpy()) and list(info.numpy()) == [0, 1, 0]
    assert_within(L.numpy()[[0, 2]], tL[[0, 2]], allowed(dtype, 4, 10), "cholesky_ex")
    U, info = ug.linalg.cholesky_ex(us, upper=True)
    assert_within(U.numpy()[[0, 2]], torch.linalg.cholesky_ex(ts, upper=True).L[[0, 2]], allowed(dtype, 4, 10),
                  "cholesky_ex upper")
    for name, call in [("linalg.lu_factor_ex", lambda: ug.linalg.lu_factor_ex(ua, check_errors=True)),
                       ("linalg.inv_ex", lambda: ug.linalg.inv_ex(ua, check_errors=True)),
                       ("linalg.cholesky_ex", lambda: ug.linalg.cholesky_ex(us, check_errors=True))]:
        with pytest.raises(ug.linalg.LinAlgError, match=rf"\[{name}\] \(batch element 1\)"):
            call()


def test_singular_matrices_raise_linalg_error_naming_the_op():
    a = ug.tensor([[1.0, 2.0], [2.0, 4.0]])
    assert issubclass(ug.linalg.LinAlgError, RuntimeError)
    for name, call in [("linalg.lu_factor", lambda: ug.linalg.lu_factor(a)),
                       ("linalg.inv", lambda: ug.linalg.inv(a)),
                       ("linalg.solve", lambda: ug.linalg.solve(a, a)),
                       ("linalg.cholesky", lambda: ug.linalg.cholesky(-a))]:
        with pytest.raises(ug.linalg.LinAlgError, match=rf"\[{name}\]"):
            call()
        with pytest.raises(RuntimeError):  # torch's lu_factor raises a plain RuntimeError, the others LinAlgError
            getattr(torch.linalg, name.split(".")[1])(*([-torch.tensor(a.numpy())] if "cholesky" in name else
                                                        [torch.tensor(a.numpy())] * (2 if "solve" in name else 1)))
    P, L, U = ug.linalg.lu(a)  # linalg.lu and the _ex forms do not raise
    assert np.allclose((P @ L @ U).numpy(), a.numpy())


def test_bad_arguments_name_the_op():
    a = ug.tensor(conditioned((3, 3), COND, seed=11))
    LU, piv = ug.linalg.lu_factor(a)
    with pytest.raises(ValueError, match=r"\[linalg.lu_factor\] expected a matrix"):
        ug.linalg.lu_factor(ug.ones(3))
    with pytest.raises(ValueError, match=r"\[linalg.lu_factor\] LU without pivoting"):
        ug.linalg.lu_factor(a, pivot=False)
    with pytest.raises(ValueError, match=r"\[linalg.lu_solve\] incompatible shapes"):
        ug.linalg.lu_solve(LU, piv, ug.ones(4, 2, dtype=ug.float64))
    with pytest.raises(TypeError, match=r"\[linalg.lu_solve\] expected int32 pivots"):
        ug.linalg.lu_solve(LU, piv.long(), ug.ones(3, 2, dtype=ug.float64))
    with pytest.raises(ValueError, match=r"\[lu_unpack\] expected pivots of shape"):
        ug.lu_unpack(LU, piv[:2])
    with pytest.raises(TypeError, match=r"\[linalg.lu_factor\] expected a float32 or float64"):
        ug.linalg.lu_factor(ug.ones(3, 3, dtype=ug.int64))
    with pytest.raises(ValueError, match=r"\[linalg.householder_product\] expected tau"):
        ug.linalg.householder_product(a, ug.ones(4, dtype=ug.float64))
    with pytest.raises(ValueError, match=r"\[linalg.tensorinv\] expected prod"):
        ug.linalg.tensorinv(ug.ones(2, 3, 4), ind=1)
    with pytest.raises(ValueError, match=r"\[linalg.tensorsolve\]"):
        ug.linalg.tensorsolve(ug.ones(2, 3, 4), ug.ones(3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_compositions_match_torch(dtype):
    a, ta = pair(conditioned((2, 4, 4), COND, seed=12), dtype)
    w, tw = pair(conditioned((2, 5, 3), COND, seed=13), dtype)
    for p in [None, 2, -2, 1, -1, float("inf"), float("-inf"), "fro", "nuc"]:
        assert_within(ug.linalg.cond(a, p), torch.linalg.cond(ta, p), allowed(dtype, 4, COND * 10), f"cond {p}")
    assert_within(ug.linalg.cond(w), torch.linalg.cond(tw), allowed(dtype, 5, COND * 10), "cond of a tall matrix")
    assert float(ug.linalg.cond(ug.zeros(2, 2), "fro")) == float("inf")
    x, tx = pair(np.random.default_rng(0).standard_normal((2, 3)), dtype)
    assert_within(ug.linalg.vander(x), torch.linalg.vander(tx), allowed(dtype, 3, 10), "vander")
    assert_within(ug.linalg.vander(x, N=5), torch.linalg.vander(tx, N=5), allowed(dtype, 3, 100), "vander N")
    assert_within(ug.linalg.vecdot(a, w[..., :4, 0:1].mT, dim=-1), torch.linalg.vecdot(ta, tw[..., :4, 0:1].mT),
                  allowed(dtype, 4), "vecdot")
    assert_within(ug.linalg.diagonal(a, offset=1), torch.linalg.diagonal(ta, offset=1), 0.0 + EPS[dtype], "diagonal")
    assert_within(ug.linalg.matmul(a, w[..., :4, :]), torch.linalg.matmul(ta, tw[..., :4, :]), allowed(dtype, 4),
                  "matmul")
    t, tt = pair(conditioned((6, 6), COND, seed=14).reshape(2, 3, 6), dtype)
    assert_within(ug.linalg.tensorinv(t, ind=2), torch.linalg.tensorinv(tt, ind=2), allowed(dtype, 6, COND * 10),
                  "tensorinv")
    b, tb = pair(np.random.default_rng(1).standard_normal((2, 3)), dtype)
    assert_within(ug.linalg.tensorsolve(t, b), torch.linalg.tensorsolve(tt, tb), allowed(dtype, 6, COND * 100),
                  "tensorsolve")
    t3, tt3 = t.reshape(2, 3, 2, 3), tt.reshape(2, 3, 2, 3)
    expected = torch.linalg.tensorsolve(tt3, tb, dims=(0,))
    moved_cond = float(torch.linalg.cond(tt3.movedim(0, -1).reshape(6, 6)))
    assert_within(ug.linalg.tensorsolve(t3, b, dims=(0,)), expected,
                  K * 6 * EPS[dtype] * moved_cond * 10 * float(expected.abs().max()), "tensorsolve dims")


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product_matches_torch_with_gradients(dtype):
    a0 = conditioned((2, 5, 3), COND, seed=15)
    geqrf, tau0 = torch.geqrf(torch.tensor(a0))
    h, th = pair(geqrf.numpy(), dtype)
    tau, ttau = pair(tau0.numpy(), dtype)
    assert_within(ug.linalg.householder_product(h, tau), torch.linalg.householder_product(th, ttau),
                  allowed(dtype, 5, 10), "householder_product")
    k2 = ug.linalg.householder_product(h, tau[..., :2])
    assert_within(k2, torch.linalg.householder_product(th, ttau[..., :2]), allowed(dtype, 5, 10), "k < n")
    expected = grads(torch.linalg.householder_product, leaf(torch, geqrf.numpy()), leaf(torch, tau0.numpy()))
    actual = grads(ug.linalg.householder_product, leaf(ug, geqrf.numpy()), leaf(ug, tau0.numpy()))
    for e, g in zip(expected, actual):
        assert_within(g, e, allowed("float64", 5, 10 * float(e.abs().max())), "householder_product grad")


def test_transforms_of_lu():
    a = conditioned((3, 4, 4), COND, seed=16)
    expected = torch.func.vmap(lambda x: torch.linalg.lu_factor(x).LU)(torch.tensor(a))
    assert_within(ug.vmap(lambda x: ug.linalg.lu_factor(x).LU)(ug.tensor(a)), expected, allowed("float64", 4, 10),
                  "vmap(lu_factor)")
    assert np.array_equal(ug.vmap(lambda x: ug.linalg.lu_factor(x).pivots)(ug.tensor(a)).numpy(),
                          torch.linalg.lu_factor(torch.tensor(a)).pivots.numpy())
    compiled = ug.jit(lambda x: ug.linalg.lu(x).U)
    assert_within(compiled(ug.tensor(a)), torch.linalg.lu(torch.tensor(a)).U, allowed("float64", 4, 10), "jit(lu)")
    singular = ug.ones(2, 2, dtype=ug.float64)
    with pytest.raises(ug.linalg.LinAlgError, match=r"\[linalg.lu_factor\]"):
        ug.jit(lambda x: ug.linalg.lu_factor(x).LU)(singular)
    assert np64(ug.jit(lambda x: ug.linalg.lu_factor_ex(x).info)(singular)) == 2


def symmetric_indefinite(batch, n, seed):
    """Random symmetric matrices with eigenvalues of both signs in +-[1/COND, 1]: Bunch-Kaufman
    takes 1 x 1 and 2 x 2 pivots on them."""
    rng = np.random.default_rng(seed)
    out = np.empty((batch, n, n))
    for i in range(batch):
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        w = np.logspace(0, -np.log10(COND), n) * np.where(np.arange(n) % 2, -1, 1)
        out[i] = (q * w) @ q.T
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_ldl_factor_and_solve_match_torch(dtype):
    a = symmetric_indefinite(4, 5, seed=20)
    a_upper_garbage = a + np.triu(np.full((5, 5), 7.0), 1)  # only the lower triangle is read
    ua, ta = pair(a_upper_garbage, dtype)
    LD, piv = ug.linalg.ldl_factor(ua)
    tLD, tpiv = torch.linalg.ldl_factor(ta)
    assert piv.dtype == ug.int32 and np.array_equal(piv.numpy(), tpiv.numpy())
    assert (tpiv < 0).any(), "the inputs should exercise 2 x 2 pivots"
    assert_within(LD, tLD, allowed(dtype, 5, COND * 10), "ldl_factor LD")
    b, tb = pair(np.random.default_rng(21).standard_normal((5, 2)), dtype)
    x = ug.linalg.ldl_solve(LD, piv, b)
    expected = torch.linalg.ldl_solve(tLD, tpiv, tb.expand(4, 5, 2))
    assert_within(x, expected, allowed(dtype, 5, COND * 10 * float(expected.abs().max())), "ldl_solve")
    LDx, pivx, info = ug.linalg.ldl_factor_ex(ua, hermitian=True)
    assert np.array_equal(LDx.numpy(), LD.numpy()) and not info.numpy().any()
    assert_within(ug.vmap(lambda m: ug.linalg.ldl_factor(m).LD)(ua), tLD, allowed(dtype, 5, COND * 10),
                  "vmap(ldl_factor)")
    assert type(ug.linalg.ldl_factor(ua)).__name__ == type(torch.linalg.ldl_factor(ta)).__name__


def test_ldl_errors():
    zero = ug.zeros(2, 3, 3, dtype=ug.float64)
    zero[0] = ug.eye(3, dtype=ug.float64)
    LD, piv, info = ug.linalg.ldl_factor_ex(zero)
    assert np.array_equal(info.numpy(), torch.linalg.ldl_factor_ex(torch.tensor(zero.numpy())).info.numpy())
    with pytest.raises(ug.linalg.LinAlgError, match=r"\[linalg.ldl_factor\] \(batch element 1\) D\[1,1\] is zero"):
        ug.linalg.ldl_factor(zero)
    a = ug.tensor(symmetric_indefinite(1, 3, seed=22)[0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\[linalg.ldl_factor\] is not differentiable"):
        ug.linalg.ldl_factor(a).LD.sum().backward()
    with pytest.raises(ValueError, match=r"\[linalg.ldl_solve\] incompatible shapes"):
        ug.linalg.ldl_solve(*ug.linalg.ldl_factor(a.detach()), ug.ones(4, 1, dtype=ug.float64))
