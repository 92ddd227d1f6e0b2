"""torch.svd_lowrank and torch.pca_lowrank: Halko, Martinsson and Tropp's randomized range finder
(2009, algorithm 4.4 and 5.1) over ug.linalg's qr and svd, as torch/_lowrank.py, whose steps
these are. Built of differentiable ops, so gradients flow as in torch."""
from . import _C, linalg


def _floating_dtype(A):
    # integer inputs are drawn against in float32, as torch's get_floating_dtype
    return A.dtype if A.dtype in (_C.float16, _C.float32, _C.float64) else _C.float32


def _approximate_basis(A, q, niter, M):
    """An orthonormal (..., m, q) Q whose span approximates the range of A - M."""
    R = _C.randn(A.shape[-1], q, dtype=_floating_dtype(A), device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = linalg.qr(X).Q
    for _ in range(niter):  # power iterations sharpen the basis where the spectrum decays slowly
        X = A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q
        Q = linalg.qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = linalg.qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:  # the basis of the smaller side
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, 2 if niter is None else niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if m < n else (U, S, V)


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V), an approximate rank-q SVD of A - M (M broadcast to A's shape; none by default):
    A - M ~ U diag(S) V^T, U (..., m, q) and V (..., n, q) with orthonormal columns; niter power
    iterations (torch.svd_lowrank). Random: for repeatable results seed ug.manual_seed."""
    if A.dim() < 2:
        raise ValueError(f"[svd_lowrank] A must have at least 2 dimensions, got shape {list(A.shape)}")
    return _svd_lowrank(A, 6 if q is None else q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the rows of A centred (each column less its mean, unless center=False), an
    approximate rank-q SVD: the columns of V are the principal directions and S**2 / (m - 1) the
    variances along them; q defaults to min(6, m, n) (torch.pca_lowrank)."""
    if A.dim() < 2:
        raise ValueError(f"[pca_lowrank] A must have at least 2 dimensions, got shape {list(A.shape)}")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"[pca_lowrank] q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"[pca_lowrank] niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter, None)
