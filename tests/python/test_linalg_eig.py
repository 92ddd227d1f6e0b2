"""ug.linalg.eig and eigvals (and solve and inv on complex matrices) against torch.linalg.

Eigenvalues come in an order LAPACK chooses, and each eigenvector is defined up to a phase, so
results are matched to torch's eigenvalue by eigenvalue, and eigenvectors compared after
aligning their phases. Tolerances follow from perturbation theory (Higham, Accuracy and
Stability of Numerical Algorithms, 2nd ed., §7 and Golub & Van Loan §7.2): geev is backward
stable, exact for A + dA with ||dA|| <= c·n·eps·||A||, so an eigenvalue errs by at most
kappa_j·c·n·eps·||A||, where kappa_j = ||y_j||·||x_j|| / |y_j^H x_j| is its condition number
(y_j the left eigenvector), and an eigenvector by about c·n·eps·||A||·kappa / gap. Gradients
are compared on losses that depend on neither the order nor the phases: those are the losses
torch's rule (the one used here) is right for.
"""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import K

EPS = {"float32": np.finfo(np.float32).eps, "float64": np.finfo(np.float64).eps,
       "complex64": np.finfo(np.float32).eps, "complex128": np.finfo(np.float64).eps}


def matrices(shape, dtype, seed=0):
    """Gaussian [..., n, n] matrices (complex ones with Gaussian parts), as numpy of dtype."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def conditions(a):
    """Each eigenvalue's condition number kappa_j (numpy, float64/complex128) and the smallest
    distance from it to another eigenvalue."""
    w, v = np.linalg.eig(a.astype(np.complex128))
    y = np.linalg.inv(v)  # rows: left eigenvectors, y_j x_j = 1
    kappa = np.linalg.norm(y, axis=-1) * np.linalg.norm(v, axis=-2)
    gaps = np.abs(w[..., :, None] - w[..., None, :]) + np.where(np.eye(w.shape[-1]), np.inf, 0)
    return kappa, gaps.min(-1)


def matched(expected, actual):
    """The permutation p (per batch entry) with actual[p[j]] closest to expected[j], checked to
    be a permutation."""
    d = np.abs(expected[..., :, None] - actual[..., None, :])
    p = d.argmin(-1)
    assert (np.sort(p, -1) == np.arange(expected.shape[-1])).all(), "eigenvalues do not match one to one"
    return p


CASES = [((5, 5), "float64"), ((3, 4, 4), "float32"), ((2, 6, 6), "complex128"), ((4, 4), "complex64"),
         ((7, 7), "float64")]


@pytest.mark.parametrize("shape,dtype", CASES)
def test_eig_matches_torch(shape, dtype):
    a = matrices(shape, dtype, seed=len(shape) * 10 + shape[-1])
    L, V = ug.linalg.eig(ug.tensor(a))
    tL, _ = torch.linalg.eig(torch.tensor(a))
    complex_dtype = "complex64" if dtype in ("float32", "complex64") else "complex128"
    assert L.dtype == getattr(ug, complex_dtype) and V.dtype == getattr(ug, complex_dtype)
    assert tuple(L.shape) == shape[:-1] and tuple(V.shape) == shape
    L, V, tL = L.numpy(), V.numpy(), tL.numpy()
    n, eps = shape[-1], EPS[dtype]
    norm = np.linalg.norm(a.astype(np.complex128), 2, axis=(-2, -1))[..., None]
    kappa, gap = conditions(a)
    allowed = K * n * eps * norm * kappa  # per eigenvalue, for each library: twice that between them
    p = matched(tL, L)
    assert (np.abs(np.take_along_axis(L, p, -1) - tL) <= 2 * allowed).all()
    # A V = V diag(L) and each column unit-norm with its largest component real (LAPACK's geev)
    residual = np.abs(a.astype(np.complex128) @ V - V * L[..., None, :]).max(-2)
    assert (residual <= K * n * eps * norm * 4).all(), residual
    assert np.allclose(np.linalg.norm(V, axis=-2), 1, atol=K * n * eps)
    largest = np.take_along_axis(V, np.abs(V).argmax(-2)[..., None, :], -2)
    assert (np.abs(largest.imag) <= K * n * eps).all()
    if dtype.startswith("float"):  # a real matrix: conjugate pairs, a real eigenvector for a real eigenvalue
        assert np.allclose(np.sort_complex(L.reshape(-1, n)), np.sort_complex(L.conj().reshape(-1, n)),
                           atol=float((2 * allowed).max()))


def test_eig_real_eigenvectors_and_pairs_exactly():
    """A rotation by 90 degrees in a plane and a scaling on the third axis: eigenvalues i, -i
    and 2, the pair's eigenvectors conjugate, the real eigenvalue's real."""
    a = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    L, V = ug.linalg.eig(ug.tensor(a))
    L, V = L.numpy(), V.numpy()
    assert sorted(L.tolist(), key=lambda z: (z.imag, z.real)) == [-1j, 2, 1j]
    j = int(np.argmin(np.abs(L - 2)))
    assert np.allclose(np.abs(V[:, j]), [0, 0, 1]) and np.all(V[:, j].imag == 0)
    i, k = int(np.argmin(np.abs(L - 1j))), int(np.argmin(np.abs(L + 1j)))
    assert np.array_equal(V[:, i], V[:, k].conj())


def test_eigvals_are_eigs_eigenvalues():
    a = ug.tensor(matrices((2, 5, 5), "float64", seed=3))
    assert ug.equal(ug.linalg.eigvals(a), ug.linalg.eig(a).eigenvalues)


def invariant_loss(m, L, V, w):
    """A loss of both results that depends on neither their order nor the eigenvectors' phases:
    sum_j |L_j|^2 + Re(L_j^3) plus sum_ij |V_ij|^2 w_i |L_j| (each eigenvector's squared
    magnitudes, weighted by row, go with its own eigenvalue); w is [n, 1]."""
    mag = L.abs()
    return (mag * mag).sum() + (L * L * L).real.sum() + ((V.abs() ** 2) * w * mag.unsqueeze(-2)).sum()


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_gradient_matches_torch_and_differences(dtype):
    a = matrices((2, 4, 4), dtype, seed=21)
    w = np.random.default_rng(22).uniform(0.5, 1.5, (4, 1))
    _, gap = conditions(a)
    assert gap.min() > 0.3  # the rule divides by the gaps: these inputs keep them wide

    def ug_loss(x):
        L, V = ug.linalg.eig(x)
        return invariant_loss(ug, L, V, ug.tensor(w))

    ta = torch.tensor(a, requires_grad=True)
    tL, tV = torch.linalg.eig(ta)
    invariant_loss(torch, tL, tV, torch.tensor(w)).backward()
    g = ug.grad(ug_loss)(ug.tensor(a)).numpy()
    assert g.dtype == a.dtype
    scale = np.abs(ta.grad.numpy()).max()
    assert np.abs(g - ta.grad.numpy()).max() <= 1e-9 * scale
    # central differences over every real (and imaginary) part of A: torch's convention is
    # dL/dRe + i dL/dIm. Their error: truncation O(h^2) and rounding eps·|L|/h, both far below.
    h, flat, numeric = 1e-6, a.reshape(-1), np.zeros(a.size, dtype=a.dtype)
    for k in range(a.size):
        for unit in (1, 1j) if dtype.startswith("complex") else (1,):
            step = np.zeros(a.size, dtype=a.dtype)
            step[k] = h * unit
            up, down = (ug_loss(ug.tensor((flat + s * step).reshape(a.shape))).item() for s in (1, -1))
            numeric[k] += (up - down) / (2 * h) * unit
    assert np.abs(g.reshape(-1) - numeric).max() <= 1e-6 * scale


def test_eig_second_derivative_matches_torch():
    a = matrices((3, 3), "float64", seed=5)

    def loss(m, x):
        L, V = m.linalg.eig(x)
        return (L * L).real.sum() + (V.abs() ** 2 * m.arange(3.0, dtype=m.float64).unsqueeze(-1) * L.abs()).sum()

    hv = ug.grad(lambda x: (ug.grad(lambda y: loss(ug, y))(x) * ug.tensor(a.T)).sum())(ug.tensor(a)).numpy()
    ta = torch.tensor(a, requires_grad=True)
    (g,) = torch.autograd.grad(loss(torch, ta), ta, create_graph=True)
    (thv,) = torch.autograd.grad((g * torch.tensor(a.T)).sum(), ta)
    assert np.abs(hv - thv.numpy()).max() <= 1e-8 * np.abs(thv.numpy()).max()


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_jvp_matches_torch(dtype):
    a, da = matrices((2, 4, 4), dtype, seed=31), matrices((2, 4, 4), dtype, seed=32)

    def outputs(m, x):
        L, V = m.linalg.eig(x)
        return (L * L).sum(-1), V.abs() ** 2 * L.abs().unsqueeze(-2)

    _, (ug_dl, ug_dv) = ug.jvp(lambda x: outputs(ug, x), (ug.tensor(a),), (ug.tensor(da),))
    _, (t_dl, t_dv) = torch.func.jvp(lambda x: outputs(torch, x), (torch.tensor(a),), (torch.tensor(da),))
    # the second output is per eigenvector: match the columns through the eigenvalues
    p = matched(torch.linalg.eigvals(torch.tensor(a)).numpy(), ug.linalg.eigvals(ug.tensor(a)).numpy())
    assert np.abs(ug_dl.numpy() - t_dl.numpy()).max() <= 1e-9 * np.abs(t_dl.numpy()).max()
    dv = np.take_along_axis(ug_dv.numpy(), p[..., None, :], -1)
    assert np.abs(dv - t_dv.numpy()).max() <= 1e-9 * np.abs(t_dv.numpy()).max()


def test_eig_under_vmap_and_jit_equals_eager():
    a = ug.tensor(matrices((3, 4, 4), "float64", seed=41))
    L, V = ug.linalg.eig(a)
    vL, vV = ug.vmap(ug.linalg.eig)(a)
    assert ug.equal(vL, L) and ug.equal(vV, V)
    jL, jV = ug.jit(lambda x: tuple(ug.linalg.eig(x)))(a)
    assert ug.equal(jL, L) and ug.equal(jV, V)
    for i in range(3):
        Li, Vi = ug.linalg.eig(a[i])
        assert ug.equal(Li, L[i]) and ug.equal(Vi, V[i])


def test_eig_errors_name_the_op():
    with pytest.raises(TypeError, match=r"\[linalg.eig\] expected a float32 or float64 \(or complex64, complex128\) "
                                        r"tensor, got int64"):
        ug.linalg.eig(ug.ones(3, 3, dtype=ug.int64))
    with pytest.raises(ValueError, match=r"\[linalg.eigvals\] expected square matrices, got shape \[2, 3\]"):
        ug.linalg.eigvals(ug.ones(2, 3))
    with pytest.raises(ValueError, match=r"\[linalg.eig\] expected a matrix"):
        ug.linalg.eig(ug.ones(3))
    L, V = ug.linalg.eig(ug.ones(2, 0, 0))
    assert tuple(L.shape) == (2, 0) and tuple(V.shape) == (2, 0, 0) and L.dtype == ug.complex64


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_solve_and_inv_match_torch(dtype):
    a = (matrices((2, 4, 4), dtype, seed=51) + 6 * np.eye(4)).astype(dtype)  # diagonally dominant: cond < 10
    b = matrices((2, 4, 3), dtype, seed=52)
    eps = EPS[dtype]
    x = ug.linalg.solve(ug.tensor(a), ug.tensor(b)).numpy()
    tx = torch.linalg.solve(torch.tensor(a), torch.tensor(b)).numpy()
    assert x.dtype == a.dtype
    # cond(A)·K·n·eps relative to the solution (forward error of a backward-stable solve)
    assert np.abs(x - tx).max() <= 10 * K * 4 * eps * np.abs(tx).max() * 2
    inv = ug.linalg.inv(ug.tensor(a)).numpy()
    assert np.abs(inv - np.linalg.inv(a.astype(np.complex128))).max() <= 10 * K * 4 * eps * np.abs(inv).max()


def test_complex_solve_gradient_matches_torch():
    a = matrices((3, 3), "complex128", seed=61) + 5 * np.eye(3)
    b = matrices((3, 2), "complex128", seed=62)
    c = matrices((3, 2), "complex128", seed=63)

    def loss(m, x, y):
        s = m.linalg.solve(x, y)
        return (s * m.conj(s)).real.sum() + (s * c_of(m)).real.sum()

    def c_of(m):
        return m.tensor(c)

    ga, gb = ug.grad(lambda x, y: loss(ug, x, y), argnums=(0, 1))(ug.tensor(a), ug.tensor(b))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    loss(torch, ta, tb).backward()
    for got, want in ((ga, ta.grad), (gb, tb.grad)):
        assert np.abs(got.numpy() - want.numpy()).max() <= 1e-10 * np.abs(want.numpy()).max()
