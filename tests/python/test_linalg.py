"""ug.linalg against torch.linalg on random matrices of chosen condition numbers.

op_table.py checks every function under every transform on small inputs conditioned by
construction; here the inputs are larger and worse conditioned, so the tolerances follow from
perturbation theory (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.): a
backward-stable factorization is exact for A + dA with ||dA|| <= c·n·eps·||A||, which bounds
reconstructions by K·n·eps·||A||, eigenvalues and singular values by the same (Weyl), solutions
and inverses by cond(A)·K·n·eps relative to their norm, and eigenvectors and singular vectors
by K·n·eps·||A|| / gap. Vectors defined up to sign are compared after aligning their signs.
"""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import K

EPS = {"float32": np.finfo(np.float32).eps, "float64": np.finfo(np.float64).eps}
DTYPES = ["float32", "float64"]


def conditioned(shape, cond, seed=0, spd=False):
    """Random [..., m, n] matrices with singular values log-spaced from 1 to 1/cond (or SPD ones
    with those eigenvalues), in float64 numpy."""
    rng = np.random.default_rng(seed)
    *batch, m, n = shape
    k = min(m, n)
    out = np.empty(shape)
    for idx in np.ndindex(*batch):
        u, _ = np.linalg.qr(rng.standard_normal((m, m)))
        v, _ = np.linalg.qr(rng.standard_normal((n, n)))
        s = np.logspace(0, -np.log10(cond), k)
        if spd:
            out[idx] = (u[:, :k] * s) @ u[:, :k].T
        else:
            out[idx] = (u[:, :k] * s) @ v[:k, :]
    return out


def pair(a, dtype):
    """The same values as a unigrad and a float64 torch tensor (rounded to dtype first)."""
    t = torch.tensor(a).to(getattr(torch, dtype))
    return ug.tensor(t.numpy()), t.double()


def np64(t):
    if isinstance(t, torch.Tensor):
        return t.detach().double().numpy()
    return t.detach().to(ug.float64).numpy() if isinstance(t, ug.Tensor) else np.asarray(t, dtype=np.float64)


def assert_within(actual, expected, allowed, what):
    """max |actual - expected| <= allowed, and the allowance small enough to catch an error."""
    err = np.max(np.abs(np64(actual) - np64(expected)), initial=0.0)
    scale = np.max(np.abs(np64(expected)), initial=0.0)
    assert allowed < 1e-2 * scale, f"{what}: the allowance {allowed:.3g} could not fail (scale {scale:.3g})"
    assert err <= allowed, f"{what}: error {err:.3g} above {allowed:.3g}"


def norm2(t):
    return float(torch.linalg.matrix_norm(t, 2).max())


def cond(t):
    return float(torch.linalg.cond(t).max())


def align(vectors, reference):
    """vectors' columns flipped to the signs of the reference's (both [..., n, k])."""
    signs = np.sign(np.sum(np64(vectors) * np64(reference), axis=-2, keepdims=True))
    return np64(vectors) * signs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [3, 16])
def test_inv_solve_det_match_torch(dtype, n):
    a, ta = pair(conditioned((2, n, n), 100.0, seed=n), dtype)
    b, tb = pair(np.random.default_rng(1).standard_normal((2, n, 3)), dtype)
    bound = K * n * EPS[dtype] * cond(ta)
    expected = torch.linalg.inv(ta)
    assert_within(ug.linalg.inv(a), expected, bound * float(expected.abs().max()) * n, "inv")
    x = torch.linalg.solve(ta, tb)
    assert_within(ug.linalg.solve(a, b), x, bound * float(x.abs().max()) * n, "solve")
    x = torch.linalg.solve(ta, tb[..., 0])
    assert_within(ug.linalg.solve(a, b[..., 0]), x, bound * float(x.abs().max()) * n, "solve (vector)")
    # log|det| moves by tr(A^-1 dA) <= n·cond·(relative size of dA).
    sign, logabsdet = ug.linalg.slogdet(a)
    expected = torch.linalg.slogdet(ta)
    assert np.array_equal(np64(sign), np64(expected.sign))
    assert_within(logabsdet, expected.logabsdet, bound * n, "slogdet")
    det = torch.linalg.det(ta)
    assert_within(ug.linalg.det(a), det, bound * n * float(det.abs().max()), "det")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_and_its_solves(dtype):
    n = 12
    a, ta = pair(conditioned((3, n, n), 1e3, seed=2, spd=True), dtype)
    l = ug.linalg.cholesky(a)
    assert_within(l @ l.mT, ta, K * n * EPS[dtype] * norm2(ta), "L L^T")
    assert np.all(np.triu(np64(l), 1) == 0)
    expected = torch.linalg.cholesky(ta)
    assert_within(l, expected, K * n * EPS[dtype] * cond(ta) * float(expected.abs().max()), "cholesky")
    assert_within(ug.linalg.cholesky(a, upper=True), expected.mT, K * n * EPS[dtype] * cond(ta), "upper")
    b, tb = pair(np.random.default_rng(3).standard_normal((3, n, 2)), dtype)
    x = torch.cholesky_solve(tb, expected)
    assert_within(ug.cholesky_solve(b, l), x, K * n * EPS[dtype] * cond(ta) * float(x.abs().max()), "cholesky_solve")
    t = torch.linalg.solve_triangular(expected, tb, upper=False)
    assert_within(ug.linalg.solve_triangular(l, b, upper=False), t,
                  K * n * EPS[dtype] * cond(expected) * float(t.abs().max()), "solve_triangular")


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_matches_torch_up_to_signs(dtype):
    n = 10
    a, ta = pair(conditioned((2, n, n), 50.0, seed=4, spd=True), dtype)
    w, v = ug.linalg.eigh(a)
    ew, ev = torch.linalg.eigh(ta)
    tol = K * n * EPS[dtype] * norm2(ta)
    assert_within(w, ew, tol, "eigenvalues")
    assert_within(ug.linalg.eigvalsh(a), ew, tol, "eigvalsh")
    assert_within((v * w.unsqueeze(-2)) @ v.mT, ta, tol, "V diag(w) V^T")
    assert_within(v.mT @ v, torch.eye(n).expand(2, n, n), K * n * EPS[dtype], "V^T V")
    gap = float((ew[..., 1:] - ew[..., :-1]).min())
    assert_within(align(v, ev), ev, tol / gap, "eigenvectors")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 9, 5), (5, 9), (6, 6)])
def test_svd_matches_torch_up_to_signs(dtype, shape):
    a, ta = pair(conditioned(shape, 30.0, seed=5), dtype)
    m, n = shape[-2:]
    k = min(m, n)
    u, s, vh = ug.linalg.svd(a, full_matrices=False)
    eu, es, evh = torch.linalg.svd(ta, full_matrices=False)
    tol = K * max(m, n) * EPS[dtype] * norm2(ta)
    assert_within(s, es, tol, "singular values")
    assert_within(ug.linalg.svdvals(a), es, tol, "svdvals")
    assert_within((u * s.unsqueeze(-2)) @ vh, ta, tol, "U diag(S) Vh")
    gap = float((es[..., :-1] - es[..., 1:]).min())
    aligned_u = align(u, eu)
    assert_within(aligned_u, eu, tol / gap, "U")
    # V's signs follow U's: flipping u_i flips v_i.
    signs = np.sign(np.sum(np64(u) * np64(eu), axis=-2))[..., :, None]
    assert_within(np64(vh) * signs, evh, tol / gap, "Vh")
    fu, fs, fvh = ug.linalg.svd(a)
    assert tuple(fu.shape) == shape[:-2] + (m, m) and tuple(fvh.shape) == shape[:-2] + (n, n)
    assert_within(fu.mT @ fu, torch.eye(m).expand(*shape[:-2], m, m), K * m * EPS[dtype], "full U orthogonal")
    assert_within(fvh @ fvh.mT, torch.eye(n).expand(*shape[:-2], n, n), K * n * EPS[dtype], "full Vh orthogonal")
    assert_within((fu[..., :k] * fs.unsqueeze(-2)) @ fvh[..., :k, :], ta, tol, "full reconstruction")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 9, 5), (5, 9)])
def test_qr_reconstructs_and_matches_torch(dtype, shape):
    a, ta = pair(conditioned(shape, 30.0, seed=6), dtype)
    m, n = shape[-2:]
    tol = K * m * EPS[dtype] * norm2(ta)
    for mode in ("reduced", "complete"):
        q, r = ug.linalg.qr(a, mode=mode)
        eq, er = torch.linalg.qr(ta, mode=mode)
        assert q.shape == tuple(eq.shape) and r.shape == tuple(er.shape)
        assert_within(q @ r, ta, tol, f"Q R ({mode})")
        c = q.shape[-1]
        assert_within(q.mT @ q, torch.eye(c).expand(*shape[:-2], c, c), K * m * EPS[dtype], f"Q^T Q ({mode})")
        assert np.all(np.tril(np64(r), -1) == 0)
        # Householder QR is unique up to the signs of R's rows (Q's columns), for full-rank A.
        k = min(m, n)
        signs = np.sign(np.diagonal(np64(r), axis1=-2, axis2=-1)[..., :k] * np.diagonal(np64(er), axis1=-2,
                                                                                       axis2=-1)[..., :k])
        assert_within(np64(q)[..., :k] * signs[..., None, :], eq[..., :k], tol * cond(ta), f"Q ({mode})")
    assert ug.linalg.qr(a, mode="r").Q.shape == (0,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norms_match_torch(dtype):
    a, ta = pair(np.random.default_rng(7).standard_normal((3, 6, 5)), dtype)
    eps = EPS[dtype]
    for ord in ("fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf")):
        expected = torch.linalg.matrix_norm(ta, ord)
        # a sum of up to 30 terms, or of the singular values: n·eps of the largest norm.
        assert_within(ug.linalg.matrix_norm(a, ord), expected, K * 30 * eps * float(expected.max()), f"ord {ord}")
    for ord in (1, 2, 3.5, float("inf"), 0):
        expected = torch.linalg.vector_norm(ta, ord, dim=(0, 2))
        assert_within(ug.linalg.vector_norm(a, ord, dim=(0, 2)), expected, K * 15 * eps * float(expected.max()),
                      f"vector ord {ord}")
        expected = torch.linalg.vector_norm(ta, ord)  # no dim: over every element
        assert_within(ug.linalg.vector_norm(a, ord), expected, K * 90 * eps * float(expected), f"vector ord {ord}, all")
    expected = torch.linalg.norm(ta[0], "nuc")
    assert_within(ug.linalg.norm(a[0], "nuc"), expected, K * 6 * eps * float(expected), "norm nuc")
    expected = torch.linalg.norm(ta, dim=(1, 2), keepdim=True)
    got = ug.linalg.norm(a, dim=(1, 2), keepdim=True)
    assert got.shape == tuple(expected.shape)
    assert_within(got, expected, K * 30 * eps * float(expected.max()), "norm fro keepdim")


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv_lstsq_rank_power(dtype):
    rng = np.random.default_rng(8)
    low_rank = rng.standard_normal((2, 7, 3)) @ rng.standard_normal((2, 3, 5))
    a, ta = pair(low_rank, dtype)
    assert np.array_equal(np64(ug.linalg.matrix_rank(a)), [3, 3])
    assert ug.linalg.matrix_rank(a).dtype == ug.int64
    full, tfull = pair(conditioned((7, 4), 20.0, seed=9), dtype)
    tol = K * 7 * EPS[dtype] * cond(tfull)
    expected = torch.linalg.pinv(tfull)
    assert_within(ug.linalg.pinv(full), expected, tol * float(expected.abs().max()) * 4, "pinv")
    b, tb = pair(rng.standard_normal((7, 2)), dtype)
    x = torch.linalg.lstsq(tfull, tb).solution
    result = ug.linalg.lstsq(full, b)
    assert_within(result.solution, x, tol * cond(tfull) * float(x.abs().max()) * 4, "lstsq")
    assert int(result.rank) == 4
    wide = torch.linalg.lstsq(tfull.mT, tb[:4]).solution
    assert_within(ug.linalg.lstsq(full.mT, b[:4]).solution, wide, tol * float(wide.abs().max()) * 4,
                  "lstsq minimum norm")
    sq, tsq = pair(conditioned((2, 4, 4), 5.0, seed=10), dtype)
    assert_within(ug.linalg.matrix_power(sq, 0), torch.eye(4).expand(2, 4, 4), 0.0, "A^0")
    for n in (1, 5, -3):
        # |n| products of sums of 4 terms, whose magnitudes |B|^|n| bound (B = A, or inv(A)
        # for n < 0, itself off by cond(A) n eps relative).
        expected = torch.linalg.matrix_power(tsq, n)
        base = torch.linalg.inv(tsq) if n < 0 else tsq
        terms = float(torch.linalg.matrix_power(base.abs(), abs(n)).max())
        allowed = K * 4 * abs(n) * EPS[dtype] * terms * (cond(tsq) if n < 0 else 1.0)
        assert_within(ug.linalg.matrix_power(sq, n), expected, allowed, f"A^{n}")


# exp(|A|), the bound below, outgrows exp(A) with the norm: in float32 it stops being a test
# of anything past norms of about 1.
@pytest.mark.parametrize("dtype, scale", [("float32", 0.1), ("float32", 1.0), ("float64", 0.1), ("float64", 1.0),
                                          ("float64", 3.0)])
def test_matrix_exp_matches_torch(dtype, scale):
    rng = np.random.default_rng(20)
    a, ta = pair(scale * rng.standard_normal((2, 5, 5)), dtype)
    expected = torch.linalg.matrix_exp(ta)
    # Every term of the Taylor polynomial and of the squarings is bounded by exp(|A|) elementwise;
    # each of the 18 + s products sums n of them.
    squarings = max(0, int(np.ceil(np.log2(float(ta.abs().sum(-1).max()) / 0.5))))
    bound = float(torch.linalg.matrix_exp(ta.abs()).max())
    allowed = K * 5 * EPS[dtype] * (18 + squarings) * bound
    assert_within(ug.linalg.matrix_exp(a), expected, allowed, "matrix_exp")
    assert_within(ug.matrix_exp(a), expected, allowed, "ug.matrix_exp")
    assert ug.linalg.matrix_exp(ug.zeros(3, 0, 0)).shape == (3, 0, 0)


def test_matrix_exp_compiled_follows_the_norm_of_each_call():
    # The number of squarings depends on the input's norm: a program traced on a small input
    # must not keep its count (it did, and was off by 11 in entries of 5e3 for a norm 24 times larger).
    f = ug.jit(ug.linalg.matrix_exp)
    rng = np.random.default_rng(21)
    for scale in (0.05, 3.0, 10.0):
        a = scale * rng.standard_normal((4, 4))
        expected = torch.linalg.matrix_exp(torch.tensor(a))
        bound = float(torch.linalg.matrix_exp(torch.tensor(np.abs(a))).max())
        assert_within(f(ug.tensor(a)), expected, K * 4 * EPS["float64"] * 30 * bound, f"jit scale {scale}")
    assert f.cache_info().traces == 1


def test_singular_and_empty_inputs_follow_torch():
    sign, logabsdet = ug.linalg.slogdet(ug.zeros(2, 2))
    assert float(sign) == 0 and float(logabsdet) == -float("inf")
    assert float(ug.linalg.det(ug.zeros(3, 3))) == 0
    assert float(ug.logdet(-ug.eye(3))) != float(ug.logdet(-ug.eye(3)))  # NaN, as torch
    assert ug.linalg.inv(ug.zeros(0, 0)).shape == (0, 0)
    assert ug.linalg.svd(ug.zeros(3, 0)).U.shape == (3, 3)


def test_errors_name_the_op_shapes_and_dtypes():
    with pytest.raises(RuntimeError, match=r"\[linalg.inv\] \(batch element 1\) the input matrix is singular"):
        ug.linalg.inv(ug.stack([ug.eye(3), ug.zeros(3, 3)]))
    with pytest.raises(RuntimeError, match=r"\[linalg.solve\] the input matrix is singular.*float32"):
        ug.linalg.solve(ug.ones(3, 3), ug.ones(3))
    with pytest.raises(RuntimeError, match=r"\[linalg.cholesky\] the input is not positive-definite: its leading "
                                           r"minor of order 2"):
        ug.linalg.cholesky(ug.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match=r"\[linalg.det\] expected square matrices, got shape \[2, 3\]"):
        ug.linalg.det(ug.ones(2, 3))
    with pytest.raises(ValueError, match=r"\[linalg.eigh\] expected a matrix or a batch of matrices"):
        ug.linalg.eigh(ug.ones(3))
    with pytest.raises(TypeError, match=r"\[linalg.inv\] expected a float32 or float64 \(or complex64, complex128\) tensor, got int64"):
        ug.linalg.inv(ug.ones(3, 3, dtype=ug.int64))
    with pytest.raises(TypeError, match=r"\[linalg.solve\] expected A and B of one dtype"):
        ug.linalg.solve(ug.eye(3), ug.ones(3, dtype=ug.float64))
    with pytest.raises(ValueError, match=r"\[linalg.solve\] incompatible shapes"):
        ug.linalg.solve(ug.eye(3), ug.ones(2, 3))
    with pytest.raises(ValueError, match=r"\[linalg.qr\] mode must be"):
        ug.linalg.qr(ug.eye(3), mode="full")
    with pytest.raises(ValueError, match=r"\[linalg.qr\] the QR decomposition is not differentiable"):
        a = ug.ones(3, 2, requires_grad=True)
        ug.linalg.qr(a, mode="complete").Q.sum().backward()
    # torch raises the same kinds (its LinAlgError is a RuntimeError).
    with pytest.raises(RuntimeError):
        torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(RuntimeError):
        torch.linalg.inv(torch.zeros(3, 3))


# ---- derivatives beyond op_table.py's first order ---------------------------------------------

def spd64(n, seed):
    return conditioned((n, n), 10.0, seed=seed, spd=True)


@pytest.mark.parametrize("name, fn, make", [
    ("inv", lambda m, a: m.linalg.inv(a).sum(), lambda: conditioned((4, 4), 10.0, seed=11)),
    ("det", lambda m, a: m.linalg.det(a), lambda: conditioned((4, 4), 10.0, seed=12)),
    ("cholesky", lambda m, a: m.linalg.cholesky(a).sum(), lambda: spd64(4, 13)),
    ("eigvalsh", lambda m, a: (m.linalg.eigvalsh(a) ** 3).sum(), lambda: spd64(4, 14)),
    ("svdvals", lambda m, a: (m.linalg.svdvals(a) ** 3).sum(), lambda: conditioned((5, 3), 10.0, seed=15)),
    ("solve", lambda m, a: m.linalg.solve(a, a[0]).sum(), lambda: conditioned((4, 4), 10.0, seed=16)),
    ("matrix_exp", lambda m, a: m.linalg.matrix_exp(2 * a).sum(), lambda: conditioned((4, 4), 10.0, seed=19)),
])
def test_second_derivatives_match_torch(name, fn, make):
    a = make()
    ta = torch.tensor(a, requires_grad=True)
    (g,) = torch.autograd.grad(fn(torch, ta), ta, create_graph=True)
    (expected,) = torch.autograd.grad((g * g).sum(), ta)
    ua = ug.tensor(a, requires_grad=True)
    (ug_g,) = ug.autograd.grad(fn(ug, ua), ua, create_graph=True)
    (actual,) = ug.autograd.grad((ug_g * ug_g).sum(), ua)
    # float64 through a few solves of cond <= 10 matrices: n·eps·cond^3 of the magnitude.
    assert_within(actual, expected, K * 4 * EPS["float64"] * 1e3 * float(expected.abs().max()), f"{name}''")


def test_vmap_of_grad_matches_torch():
    a = conditioned((3, 4, 4), 10.0, seed=17)
    expected = torch.func.vmap(torch.func.grad(lambda x: torch.linalg.slogdet(x).logabsdet))(torch.tensor(a))
    actual = ug.vmap(ug.grad(lambda x: ug.linalg.slogdet(x).logabsdet))(ug.tensor(a))
    assert_within(actual, expected, K * 4 * EPS["float64"] * 10 * float(expected.abs().max()), "vmap(grad(slogdet))")
    spd = np.stack([spd64(4, s) for s in range(3)])
    expected = torch.func.vmap(torch.func.grad(lambda x: torch.linalg.eigvalsh(x)[-1]))(torch.tensor(spd))
    actual = ug.vmap(ug.grad(lambda x: ug.linalg.eigvalsh(x)[-1]))(ug.tensor(spd))
    # the gradient v v^T of the largest eigenvalue (gap >= 0.2) does not depend on v's sign.
    assert_within(actual, expected, K * 4 * EPS["float64"] * 10 / 0.2, "vmap(grad(eigvalsh))")


@pytest.mark.filterwarnings("ignore:torch.(cholesky|qr) is deprecated")
def test_top_level_names_and_methods_match_torch():
    a = conditioned((2, 4, 4), 10.0, seed=18)
    spd = np.stack([spd64(4, s) for s in range(2)])
    tol = K * 4 * EPS["float64"] * 10 * 100  # n·eps·cond of results of size up to 100
    def parts(result):
        return tuple(result) if isinstance(result, tuple) else (result,)

    for name, args in [("inverse", ()), ("det", ()), ("matrix_power", (3,)), ("matrix_exp", ()), ("pinverse", ()),
                       ("slogdet", ())]:
        expected = parts(getattr(torch, name)(torch.tensor(a), *args))
        for form, result in (("ug", getattr(ug, name)(ug.tensor(a), *args)),
                             ("Tensor", getattr(ug.tensor(a), name)(*args))):
            for actual, want in zip(parts(result), expected, strict=True):
                assert_within(actual, want, tol, f"{form}.{name}")
    assert_within(ug.logdet(ug.tensor(spd)), torch.logdet(torch.tensor(spd)), tol, "logdet")
    for upper in (False, True):
        assert_within(ug.cholesky(ug.tensor(spd), upper), torch.cholesky(torch.tensor(spd), upper), tol, "cholesky")
    L, tL = ug.linalg.cholesky(ug.tensor(spd)), torch.linalg.cholesky(torch.tensor(spd))
    assert_within(ug.cholesky_inverse(L), torch.cholesky_inverse(tL), tol, "cholesky_inverse")
    U, S, V = ug.svd(ug.tensor(a))
    tU, tS, tV = torch.svd(torch.tensor(a))
    assert_within((U * S.unsqueeze(-2)) @ V.mT, torch.tensor(a), tol, "torch.svd's V")
    assert_within(S, tS, tol, "torch.svd's S")
    Q, R = ug.qr(ug.tensor(a), some=False)
    assert_within(Q @ R, torch.tensor(a), tol, "torch.qr")


def test_lstsq_refuses_rank_deficient_input():
    a = ug.tensor([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    with pytest.raises(RuntimeError, match=r"\[linalg.lstsq\] A is rank-deficient \(rank 1 < min\(m, n\) = 2"):
        ug.linalg.lstsq(a, ug.ones(3))


def test_vmap_of_lstsq_takes_the_minimum_norm_solution_at_any_rank():
    """vmap cannot raise on a rank-deficient batch entry, so it solves every entry by the SVD:
    torch's gelsd driver (the minimum-norm least-squares solution) is the reference."""
    rng = np.random.default_rng(3)
    full = rng.normal(size=(6, 3))
    deficient = np.stack([full[:, 0], full[:, 1], full[:, 0] + 2 * full[:, 1]], axis=1)  # rank 2
    a, b = np.stack([full, deficient]), rng.normal(size=(2, 6, 2))
    expected = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd").solution
    actual = ug.vmap(lambda m, r: ug.linalg.lstsq(m, r).solution)(ug.tensor(a), ug.tensor(b))
    # The SVD-based solve: each element a sum of ~3·6 products, error ~ cond · n · eps · |x|.
    assert_within(actual, expected, 1e3 * 18 * EPS["float64"] * float(expected.abs().max()), "vmap(lstsq)")
