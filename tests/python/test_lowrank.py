"""ug.svd_lowrank and ug.pca_lowrank, the randomized low-rank SVD and PCA, against torch 2.13:
the random draws differ, so singular values, reconstructions and spanned subspaces are compared,
not the signs or bases of the vectors."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)


def low_rank(*shape, rank):
    """A float64 array of exactly this rank (batched over the leading dims)."""
    *batch, m, n = shape
    return RNG.standard_normal((*batch, m, rank)) @ RNG.standard_normal((*batch, rank, n))


def projector(V):
    return V @ np.swapaxes(V, -1, -2)


def check_svd(U, S, V, target, q):
    U, S, V = U.numpy(), S.numpy(), V.numpy()
    assert U.shape == (*target.shape[:-1], q) and V.shape == (*target.shape[:-2], target.shape[-1], q)
    eye = np.eye(q)
    # orthonormal columns, from Householder QR and LAPACK SVD in float64: a few ulp times the size
    np.testing.assert_allclose(np.swapaxes(U, -1, -2) @ U, np.broadcast_to(eye, U.shape[:-2] + (q, q)), atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(V, -1, -2) @ V, np.broadcast_to(eye, V.shape[:-2] + (q, q)), atol=1e-12)
    scale = np.abs(target).max()
    # rank <= q: the approximation is exact up to the QR and SVD's rounding of values ~scale
    np.testing.assert_allclose((U * S[..., None, :]) @ np.swapaxes(V, -1, -2), target, atol=1e-11 * scale)


@pytest.mark.parametrize("shape,rank,q", [((20, 12), 4, 6), ((9, 25), 3, 5), ((2, 15, 10), 2, 4), ((8, 8), 6, 6)])
def test_svd_lowrank_matches_torch(shape, rank, q):
    a = low_rank(*shape, rank=rank)
    ug.manual_seed(0)
    U, S, V = ug.svd_lowrank(ug.tensor(a), q=q)
    check_svd(U, S, V, a, q)
    tU, tS, tV = torch.svd_lowrank(torch.tensor(a), q=q)
    np.testing.assert_allclose(S.numpy()[..., :rank], tS.numpy()[..., :rank], rtol=1e-11)
    np.testing.assert_allclose(S.numpy()[..., rank:], 0, atol=1e-11 * np.abs(a).max())
    np.testing.assert_allclose(projector(V.numpy()[..., :rank]), projector(tV.numpy()[..., :rank]), atol=1e-10)


def test_svd_lowrank_defaults_and_M():
    a, mu = low_rank(30, 10, rank=3), RNG.standard_normal((1, 10))
    ug.manual_seed(1)
    U, S, V = ug.svd_lowrank(ug.tensor(a + mu), M=ug.tensor(mu))  # q=6 by default; M broadcast
    check_svd(U, S, V, a, 6)
    tS = torch.svd_lowrank(torch.tensor(a + mu), M=torch.tensor(mu))[1]
    np.testing.assert_allclose(S.numpy()[:3], tS.numpy()[:3], rtol=1e-11)
    # an approximate SVD of a full-rank matrix: the leading values, as the exact ones with enough iterations
    b = RNG.standard_normal((40, 30)) * np.geomspace(1, 1e-6, 30)
    S = ug.svd_lowrank(ug.tensor(b), q=8, niter=6)[1].numpy()
    np.testing.assert_allclose(S[:4], np.linalg.svd(b, compute_uv=False)[:4], rtol=1e-6)


@pytest.mark.parametrize("center", [True, False])
def test_pca_lowrank_matches_torch(center):
    a = low_rank(50, 7, rank=3) + RNG.standard_normal(7)  # an offset each row shares
    ug.manual_seed(2)
    U, S, V = ug.pca_lowrank(ug.tensor(a), center=center)  # q = min(6, m, n)
    tU, tS, tV = torch.pca_lowrank(torch.tensor(a), center=center)
    assert S.shape == tS.shape == (6,)
    target = a - a.mean(0) if center else a
    check_svd(U, S, V, target, 6)
    rank = 3 if center else 4  # without centring the offset is a fourth direction
    np.testing.assert_allclose(S.numpy()[:rank], tS.numpy()[:rank], rtol=1e-10)
    np.testing.assert_allclose(projector(V.numpy()[:, :rank]), projector(tV.numpy()[:, :rank]), atol=1e-9)
    U, S, V = ug.pca_lowrank(ug.tensor(a), q=2, niter=0)
    assert S.shape == (2,) and V.shape == (7, 2)


def test_singular_values_gradient_matches_torch():
    # with rank(A) <= q the singular values are exact, so their gradient is the SVD's: U V^T
    a = low_rank(12, 9, rank=3)
    A = ug.tensor(a, requires_grad=True)
    ug.svd_lowrank(A, q=5)[1][:3].sum().backward()
    tA = torch.tensor(a, requires_grad=True)
    torch.linalg.svdvals(tA)[:3].sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), tA.grad.numpy(), atol=1e-9)


def test_errors_as_torch():
    a = ug.randn(6, 5)
    with pytest.raises(ValueError, match=r"\[pca_lowrank\] q\(=6\) must be non-negative integer and not greater than "
                                         r"min\(m, n\)=5"):
        ug.pca_lowrank(a, q=6)
    with pytest.raises(ValueError, match=r"q\(=6\) must be non-negative integer"):
        torch.pca_lowrank(torch.randn(6, 5), q=6)
    with pytest.raises(ValueError, match=r"\[pca_lowrank\] niter\(=-1\) must be non-negative integer"):
        ug.pca_lowrank(a, niter=-1)
    with pytest.raises(ValueError, match=r"\[svd_lowrank\] A must have at least 2 dimensions, got shape \[5\]"):
        ug.svd_lowrank(ug.randn(5))
