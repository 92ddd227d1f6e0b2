"""ug.linalg: torch.linalg's functions, signatures and named results over ug::linalg (C++).

Matrices are the last two dims, leading dims are a batch; float32 and float64. A singular
input to inv or solve and a non-positive-definite one to cholesky raise RuntimeError naming the
op (torch raises its LinAlgError, also a RuntimeError). The derivatives of eigh and svd assume
distinct eigenvalues and singular values, and losses that do not depend on the signs of the
eigenvectors or singular vectors, as torch documents.
"""
from collections import namedtuple

from ._C import _linalg as _la

__all__ = ["cross", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky", "qr", "eigh", "eigvalsh", "svd",
           "svdvals", "lstsq", "pinv", "matrix_rank", "matrix_power", "matrix_exp", "norm", "vector_norm", "matrix_norm",
           "cholesky_solve", "multi_dot"]

SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
QrResult = namedtuple("linalg_qr", ["Q", "R"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
SvdResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def inv(A):
    """The inverse of each square matrix (torch.linalg.inv)."""
    return _la.inv(A)


def det(A):
    return _la.det(A)


def slogdet(A):
    """(sign, logabsdet): sign -1, 0 or 1 and log|det A| (-inf for a singular A)."""
    return SlogdetResult(*_la.slogdet(A))


def solve(A, B, *, left=True):
    """X with A X = B (X A = B when left=False); B a matrix batch or vector(s)."""
    return _la.solve(A, B, left)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    return _la.solve_triangular(A, B, upper, left, unitriangular)


def cholesky(A, *, upper=False):
    return _la.cholesky(A, upper)


def cholesky_solve(B, L, upper=False):
    """X with (L L^T) X = B (torch.cholesky_solve; U^T U when upper)."""
    return _la.cholesky_solve(B, L, upper)


def qr(A, mode="reduced"):
    return QrResult(*_la.qr(A, mode))


def eigh(A, UPLO="L"):
    return EighResult(*_la.eigh(A, UPLO))


def eigvalsh(A, UPLO="L"):
    return _la.eigvalsh(A, UPLO)


def svd(A, full_matrices=True, *, driver=None):
    return SvdResult(*_la.svd(A, full_matrices))


def svdvals(A, *, driver=None):
    return _la.svdvals(A)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares (for wide A the minimum-norm) solution for full-rank A, with its rank;
    residuals and singular_values are empty, as with torch's default CPU driver (gelsy)."""
    return LstsqResult(*_la.lstsq(A, B))


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    return _la.pinv(A, atol, rtol, hermitian)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    return _la.matrix_rank(A, atol, rtol, hermitian)


def matrix_power(A, n):
    return _la.matrix_power(A, n)


def matrix_exp(A):
    """exp(A) of each square matrix (torch.linalg.matrix_exp, jax.scipy.linalg.expm), by scaling
    and squaring; differentiable to any order, and one op under ug.jit."""
    return _la.matrix_exp(A)


def multi_dot(tensors):
    """The product of two or more matrices in the order that takes the fewest multiply-adds
    (torch.linalg.multi_dot); the first may be a 1-d row vector and the last a 1-d column vector."""
    return _la.multi_dot(list(tensors))


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along dim, input and other of one rank and dtype,
    broadcast (torch.linalg.cross)."""
    return _la.cross(input, other, dim=dim)


def _dims(dim):
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def _ord(ord):
    """A numeric ord as a float (inf stays inf); a string as it is."""
    return ord if ord is None or isinstance(ord, str) else float(ord)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.to(dtype)
    return _la.vector_norm(x, float(ord), _dims(dim), keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    if dtype is not None:
        A = A.to(dtype)
    return _la.matrix_norm(A, _ord(ord), list(dim), keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        A = A.to(dtype)
    return _la.norm(A, _ord(ord), _dims(dim), keepdim)
