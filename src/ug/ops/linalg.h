// Matrix products as free functions, as in torch:: (the Tensor methods call these), and
// torch.linalg's decompositions and solvers in ug::linalg (ops/linalg_solvers.cpp).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

/** torch.matmul: 1-D operands are promoted to matrices and the added dim removed again;
 *  leading (batch) dims broadcast. */
Tensor matmul(const Tensor& a, const Tensor& b);
/** [M, K] @ [K, N]; both operands must be 2-D. */
Tensor mm(const Tensor& a, const Tensor& b);
/** [B, M, K] @ [B, K, N]; both operands must be 3-D with the same batch size. */
Tensor bmm(const Tensor& a, const Tensor& b);
/** The inner product of two 1-D tensors of the same length, as a 0-d tensor. */
Tensor dot(const Tensor& a, const Tensor& b);
/** out[i, j] = a[i] * b[j] for 1-D a and b. */
Tensor outer(const Tensor& a, const Tensor& b);
/** Einstein summation, e.g. "bij,bjk->bik", "ii->i", "...ij->...ji", "i,i". Letters label dims,
 *  "..." stands for broadcast dims; without "->" the output is the ellipsis dims followed by
 *  the labels used once, in alphabetical order. Operands are contracted left to right, each
 *  contraction one batched matrix product. */
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

/** torch.cholesky_solve: X with A X = B for A = L L^T (or U^T U when upper), given the factor. */
Tensor cholesky_solve(const Tensor& b, const Tensor& l, bool upper = false);

/** torch.linalg. Matrices are the last two dims, any leading dims are a batch; float32 and
 *  float64. Decompositions that can fail (a singular matrix for inv and solve, one that is not
 *  positive-definite for cholesky) raise RuntimeError naming the op and the batch element. The
 *  derivatives of eigh and svd assume distinct eigenvalues and singular values, and those of
 *  eigenvectors and singular vectors a loss that does not depend on their signs, as torch's. */
namespace linalg {

/** A matrix for which a decomposition or solve cannot proceed (singular, not positive-definite,
 *  no convergence): Python ug.linalg.LinAlgError, a RuntimeError as torch.linalg.LinAlgError. */
struct LinAlgError : RuntimeError {
  using RuntimeError::RuntimeError;
};

struct SlogdetResult {
  Tensor sign, logabsdet;
};
struct EighResult {
  Tensor eigenvalues, eigenvectors;
};
struct EigResult {
  Tensor eigenvalues, eigenvectors;
};
struct SvdResult {
  Tensor U, S, Vh;
};
struct QrResult {
  Tensor Q, R;
};
struct LstsqResult {
  Tensor solution, residuals, rank, singular_values;
};
struct CholeskyExResult {
  Tensor L, info;
};
struct LuFactorResult {
  Tensor LU, pivots;
};
struct LuFactorExResult {
  Tensor LU, pivots, info;
};
struct LuResult {
  Tensor P, L, U;
};
struct LdlFactorResult {
  Tensor LD, pivots;
};
struct LdlFactorExResult {
  Tensor LD, pivots, info;
};
struct InvExResult {
  Tensor inverse, info;
};
struct SolveExResult {
  Tensor result, info;
};

Tensor inv(const Tensor& a);
/** sign * exp(logabsdet) of slogdet: 0 for a singular matrix, whose derivative (the adjugate,
 *  which torch computes by an SVD) is not implemented: backward raises, naming inv. */
Tensor det(const Tensor& a);
/** sign (-1, 0 or 1) and log|det|: 0 and -inf for a singular matrix. */
SlogdetResult slogdet(const Tensor& a);
/** X with A X = B (X A = B when !left); B is a matrix [..., n, k] or a vector ([n], or the
 *  batch of A's vectors [..., n]); batch dims broadcast. */
Tensor solve(const Tensor& a, const Tensor& b, bool left = true);
/** X with A X = B (X A = B when !left) for triangular A: only its upper or lower triangle is
 *  read, and its diagonal is taken as ones when unitriangular. */
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left = true, bool unitriangular = false);
/** Lower triangular L with A = L L^T, from A's lower triangle (upper: U = L^T from its upper one). */
Tensor cholesky(const Tensor& a, bool upper = false);
/** cholesky without raising: info [...] int32 is 0, or the order of the leading minor that is
 *  not positive-definite (L is then partial); check_errors raises as cholesky does. */
CholeskyExResult cholesky_ex(const Tensor& a, bool upper = false, bool check_errors = false);
/** mode "reduced" (Q [m, k], R [k, n]), "complete" (Q [m, m], R [m, n]) or "r" (R alone, Q empty). */
QrResult qr(const Tensor& a, std::string_view mode = "reduced");
/** Ascending eigenvalues and eigenvectors (columns) of the symmetric matrix whose lower (uplo
 *  "L") or upper ("U") triangle A holds. */
EighResult eigh(const Tensor& a, std::string_view uplo = "L");
Tensor eigvalsh(const Tensor& a, std::string_view uplo = "L");
/** The eigenvalues and right eigenvectors of a general square matrix (torch.linalg.eig):
 *  complex64 for float32 or complex64 input, complex128 for float64 or complex128; each
 *  eigenvector has unit norm and its largest component real, as LAPACK's geev gives them. */
EigResult eig(const Tensor& a);
Tensor eigvals(const Tensor& a);
/** A = U diag(S) Vh, S descending; full_matrices: U [m, m] and Vh [n, n], else [m, k], [k, n]. */
SvdResult svd(const Tensor& a, bool full_matrices = true);
Tensor svdvals(const Tensor& a);
/** The least-squares solution of A X = B (the minimum-norm one for m < n), for A of full
 *  rank, as torch's default driver on the CPU (gelsy) gives it: its rank, no residuals or
 *  singular values (empty tensors). */
LstsqResult lstsq(const Tensor& a, const Tensor& b);
/** The pseudo-inverse: singular values (eigenvalues' magnitudes when hermitian) at most
 *  max(atol, rtol * largest) count as zero; rtol defaults to eps * max(m, n) when atol is not
 *  given, else to 0. */
Tensor pinv(const Tensor& a, std::optional<double> atol = {}, std::optional<double> rtol = {}, bool hermitian = false);
/** The number of singular values above pinv's threshold (int64). */
Tensor matrix_rank(const Tensor& a, std::optional<double> atol = {}, std::optional<double> rtol = {},
                   bool hermitian = false);
/** A^n by repeated squaring; n < 0: inv(A)^-n; n = 0: the identity. */
Tensor matrix_power(const Tensor& a, int64_t n);
/** exp(A) of square matrices [..., n, n], float32 or float64, by scaling and squaring a Taylor
 *  polynomial (ops/matrix_exp.cpp); differentiable to any order. */
Tensor matrix_exp(const Tensor& a);
/** The product of two or more matrices of one dtype, multiplied in the order that takes the
 *  fewest multiply-adds (ops/multi_dot.cpp); the first may be a 1-d row vector and the last a
 *  1-d column vector, their dim dropped from the result. */
Tensor multi_dot(const std::vector<Tensor>& tensors);
// The LU family (ops/linalg_lu.cpp): A [..., m, n] = P L U with partial pivoting (LAPACK's
// getrf), L [..., m, k] unit lower and U [..., k, n] upper triangular (k = min(m, n)); pivots
// [..., k] int32 are LAPACK's 1-based row swaps, applied in order. pivot=false (no pivoting)
// raises, as torch on the CPU.
/** L and U packed in one [..., m, n] tensor (L's unit diagonal implied) and the pivots; a
 *  singular matrix (a zero on U's diagonal) raises LinAlgError. */
LuFactorResult lu_factor(const Tensor& a, bool pivot = true);
/** lu_factor without raising: info [...] int32 is 0, or the 1-based index of U's first zero
 *  diagonal element; check_errors raises as lu_factor does. */
LuFactorExResult lu_factor_ex(const Tensor& a, bool pivot = true, bool check_errors = false);
/** P, L, U; singular matrices are fine. */
LuResult lu(const Tensor& a, bool pivot = true);
/** X with A X = B (X A = B when !left; A^T in place of A when adjoint) for A given by
 *  lu_factor's LU and pivots; B [..., n, k], batch dims broadcast. */
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left = true, bool adjoint = false);
/** solve without raising: info as lu_factor_ex's (the result is then inf or nan). */
SolveExResult solve_ex(const Tensor& a, const Tensor& b, bool left = true, bool check_errors = false);
/** inv without raising: info as lu_factor_ex's. */
InvExResult inv_ex(const Tensor& a, bool check_errors = false);
/** Bunch-Kaufman A = L D L^T of symmetric A [..., n, n] from its lower triangle (LAPACK's
 *  sytrf): LD holds L below its unit diagonal and D's 1 x 1 and 2 x 2 blocks, pivots (int32)
 *  are LAPACK's (negative for 2 x 2 blocks); a zero on D's diagonal raises LinAlgError. Not
 *  differentiable, as torch's; hermitian is the same as symmetric for real matrices. */
LdlFactorResult ldl_factor(const Tensor& a, bool hermitian = false);
/** ldl_factor without raising: info [...] int32 is 0 or the 1-based index of D's zero. */
LdlFactorExResult ldl_factor_ex(const Tensor& a, bool hermitian = false, bool check_errors = false);
/** X with A X = B for A given by ldl_factor's LD and pivots; batch dims broadcast. */
Tensor ldl_solve(const Tensor& ld, const Tensor& pivots, const Tensor& b, bool hermitian = false);
/** The condition number: p absent or +-2 from the singular values (largest / smallest, or its
 *  inverse for -2), else matrix_norm(A, p) * matrix_norm(inv(A), p) for square A ("fro",
 *  "nuc", +-1, +-inf), inf for a singular one. */
Tensor cond(const Tensor& a, std::optional<double> p = {});
Tensor cond(const Tensor& a, std::string_view p);
/** The product H_1 ... H_k of Householder reflectors H_i = I - tau_i v_i v_i^T, v_i column i
 *  of A [..., m, n] below its diagonal with a 1 on it (LAPACK's orgqr): its first n columns. */
Tensor householder_product(const Tensor& a, const Tensor& tau);
/** The inverse of A as a map from its last dims to its first `ind` ones: result shape
 *  A.shape[ind:] + A.shape[:ind]. */
Tensor tensorinv(const Tensor& a, int64_t ind = 2);
/** X with tensordot(A, X, X.dim()) = B; dims of A, if given, are moved last first. */
Tensor tensorsolve(const Tensor& a, const Tensor& b, const std::optional<Dims>& dims = {});
/** [..., n, N] powers x^0 ... x^(N-1) of x [..., n] (N defaults to n). */
Tensor vander(const Tensor& x, std::optional<int64_t> n = {});
/** The dot product of x and y along dim, broadcast. */
Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim = -1);
/** ug::diagonal with torch.linalg's defaults (the last two dims). */
Tensor diagonal(const Tensor& a, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
/** The vector ord-norm over dims (all when absent): ord 0, inf, -inf or any number. */
Tensor vector_norm(const Tensor& x, double ord = 2, const std::optional<Dims>& dims = {}, bool keepdim = false);
/** The matrix norm over two dims: ord "fro" or "nuc". */
Tensor matrix_norm(const Tensor& a, std::string_view ord = "fro", const Dims& dims = {-2, -1}, bool keepdim = false);
/** ord 1 / -1 (largest / smallest column sum of |a|), inf / -inf (row sums), 2 / -2 (largest /
 *  smallest singular value). */
Tensor matrix_norm(const Tensor& a, double ord, const Dims& dims = {-2, -1}, bool keepdim = false);
/** torch.linalg.norm: without ord and dims the 2-norm of all elements; with ord and no dims a
 *  1-D input's vector norm or a 2-D input's matrix norm; one dim a vector norm, two a matrix
 *  norm ("fro" without ord). */
Tensor norm(const Tensor& x, std::optional<double> ord = {}, const std::optional<Dims>& dims = {},
            bool keepdim = false);
Tensor norm(const Tensor& x, std::string_view ord, const std::optional<Dims>& dims = {}, bool keepdim = false);
/** The cross product of 3-vectors along dim, a and b of one rank and dtype, broadcast
 *  (ops/composite.cpp, with ug::cross). */
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1);

}  // namespace linalg

/** torch.lu_unpack: P [..., m, m], L [..., m, k] and U [..., k, n] from lu_factor's LU and
 *  pivots; without unpack_data L and U, without unpack_pivots P, are empty. */
linalg::LuResult lu_unpack(const Tensor& lu, const Tensor& pivots, bool unpack_data = true, bool unpack_pivots = true);

}  // namespace ug
