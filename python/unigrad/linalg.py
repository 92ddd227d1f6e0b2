"""ug.linalg: torch.linalg's functions, signatures and named results over ug::linalg (C++).

Matrices are the last two dims, leading dims are a batch; float32 and float64, and complex64
and complex128 for solve, inv, eig and eigvals (eig's results are complex for any input). A
singular input to inv, solve or lu_factor and a non-positive-definite one to cholesky raise
LinAlgError (a RuntimeError, as torch's) naming the op; the *_ex forms return an info tensor
instead. The derivatives of eig, eigh and svd assume distinct eigenvalues and singular values,
and losses that do not depend on the signs (phases) of the eigenvectors or singular vectors,
as torch documents.
"""
from collections import namedtuple

from ._C import _linalg as _la
from ._C.errors import LinAlgError

__all__ = ["cross", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky", "qr", "eigh", "eigvalsh", "svd",
           "svdvals", "lstsq", "pinv", "matrix_rank", "matrix_power", "matrix_exp", "norm", "vector_norm", "matrix_norm",
           "cholesky_solve", "multi_dot", "LinAlgError", "cholesky_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve",
           "solve_ex", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "cond", "householder_product", "tensorinv", "tensorsolve", "vander", "vecdot",
           "diagonal", "matmul", "eig", "eigvals"]

SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
QrResult = namedtuple("linalg_qr", ["Q", "R"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
SvdResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
CholeskyExResult = namedtuple("linalg_cholesky_ex", ["L", "info"])
LUFactorResult = namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = namedtuple("linalg_lu", ["P", "L", "U"])
SolveExResult = namedtuple("linalg_solve_ex", ["result", "info"])
InvExResult = namedtuple("linalg_inv_ex", ["inverse", "info"])
LDLFactorResult = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


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


def cholesky_ex(A, *, upper=False, check_errors=False):
    """cholesky without raising: info is 0, or the order of the leading minor that is not
    positive-definite."""
    return CholeskyExResult(*_la.cholesky_ex(A, upper, check_errors))


def inv_ex(A, *, check_errors=False):
    """inv without raising: info is 0, or the 1-based index of U's first zero diagonal element."""
    return InvExResult(*_la.inv_ex(A, check_errors))


def solve_ex(A, B, *, left=True, check_errors=False):
    """solve without raising: info as inv_ex's."""
    return SolveExResult(*_la.solve_ex(A, B, left, check_errors))


def lu_factor(A, *, pivot=True):
    """(LU, pivots) with A = P L U: L below LU's unit diagonal, U on and above it, pivots (int32)
    LAPACK's 1-based row swaps; a singular A raises LinAlgError."""
    return LUFactorResult(*_la.lu_factor(A, pivot))


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    return LUFactorExResult(*_la.lu_factor_ex(A, pivot, check_errors))


def lu(A, *, pivot=True):
    """(P, L, U) with A = P L U, L [..., m, k] and U [..., k, n] (k = min(m, n))."""
    return LUResult(*_la.lu(A, pivot))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (X A = B when left=False; A^T for A when adjoint) from lu_factor's result."""
    return _la.lu_solve(LU, pivots, B, left, adjoint)


def ldl_factor(A, *, hermitian=False):
    """(LD, pivots): Bunch-Kaufman A = L D L^T of a symmetric A from its lower triangle (LAPACK's
    sytrf); not differentiable, as torch's."""
    return LDLFactorResult(*_la.ldl_factor(A, hermitian))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    return LDLFactorExResult(*_la.ldl_factor_ex(A, hermitian, check_errors))


def ldl_solve(LD, pivots, B, *, hermitian=False):
    return _la.ldl_solve(LD, pivots, B, hermitian)


def cond(A, p=None):
    """The condition number in the p-norm: None or +-2 from the singular values, else
    norm(A, p) * norm(inv(A), p) (inf for a singular A)."""
    return _la.cond(A, _ord(p))


def householder_product(A, tau):
    """The first n columns of the product of Householder reflectors (LAPACK's orgqr)."""
    return _la.householder_product(A, tau)


def tensorinv(A, ind=2):
    return _la.tensorinv(A, ind)


def tensorsolve(A, B, dims=None):
    return _la.tensorsolve(A, B, _dims(dims))


def vander(x, *, N=None):
    """[..., n, N] with the powers x^0, ..., x^(N-1) of x [..., n]."""
    return _la.vander(x, N)


def vecdot(x, y, *, dim=-1):
    return _la.vecdot(x, y, dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return _la.diagonal(A, offset, dim1, dim2)


def matmul(input, other):
    return _la.matmul(input, other)


def eig(A):
    """The eigenvalues and right eigenvectors of each square matrix, complex whatever A is
    (torch.linalg.eig): each eigenvector has unit norm and its largest component real."""
    return EigResult(*_la.eig(A))


def eigvals(A):
    return _la.eigvals(A)


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
