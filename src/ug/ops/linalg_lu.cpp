// torch.linalg's LU family. One op has a kernel, linalg_lu_factor (LAPACK's getrf), and carries
// torch's derivative rules (linalg_lu_backward and linalg_lu_jvp in FunctionsManual.cpp, for
// real matrices); lu, lu_unpack, lu_solve and the _ex forms of solve and inv are composed of it,
// triangular solves and matmul, so that their derivatives (lu_solve's with respect to LU and B)
// follow. The pivots' permutation is built with tensor ops, one swap at a time, so that vmap
// and jit see it. linalg_ldl_factor and linalg_ldl_solve (sytrf, sytrs) have no derivative,
// as torch's: theirs raise. The rest (cond, householder_product, tensorinv, ...) are
// compositions.
#include <cmath>
#include <limits>
#include <string>

#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/linalg_common.h"
#include "ug/ops/reduce.h"
#include "ug/ops/view.h"

namespace ug {

using namespace linalg_detail;

namespace {

const graph::OpDef kLuFactor("linalg_lu_factor");
const graph::OpDef kLdlFactor("linalg_ldl_factor");
const graph::OpDef kLdlSolve("linalg_ldl_solve");

Options int_like(const Tensor& t, DType dtype) { return {.dtype = dtype, .device = t.device()}; }

/** perm [..., m] (int64) with row i of L U = row perm[i] of A, from pivots [..., k]: LAPACK's
 *  1-based row swaps, applied in order. */
Tensor permutation(const Tensor& pivots, int64_t m) {
  const Tensor rows = arange(m, int_like(pivots, DType::Int64));
  const Tensor piv = pivots.to(DType::Int64) - 1;
  Shape shape = pivots.shape();
  shape.back() = m;
  Tensor perm = rows.expand(shape);
  for (int64_t i = 0; i < pivots.size(-1); ++i) {
    Tensor p = piv.narrow(-1, i, 1);
    Tensor at_i = perm.narrow(-1, i, 1), at_p = perm.gather(-1, p);
    perm = where(rows == i, at_p, where(rows == p, at_i, perm));
  }
  return perm;
}

/** P [..., m, m] with A = P L U (P[perm[c], c] = 1), of like_this's dtype. */
Tensor permutation_matrix(const Tensor& pivots, int64_t m, const Tensor& like_this) {
  const Tensor rows = arange(m, int_like(pivots, DType::Int64));
  return (permutation(pivots, m).unsqueeze(-2) == rows.unsqueeze(-1)).to(like_this.dtype());
}

/** L [..., m, k] (unit lower) and U [..., k, n] (upper) packed in LU [..., m, n]. */
Tensor unpack_l(const Tensor& lu) {
  const int64_t m = lu.size(-2), k = std::min(m, lu.size(-1));
  return tril(lu.narrow(-1, 0, k), -1) + eye(m, k, like(lu));
}
Tensor unpack_u(const Tensor& lu) { return triu(lu.narrow(-2, 0, std::min(lu.size(-2), lu.size(-1)))); }

// The triangular solves of the rules: L^-1 X and L^-T X (L unit lower), X U^-1 and X U^-T.
Tensor l_solve(const Tensor& l, const Tensor& x) { return linalg::solve_triangular(l, x, false, true, true); }
Tensor lt_solve(const Tensor& l, const Tensor& x) { return linalg::solve_triangular(l.mT(), x, true, true, true); }
Tensor u_solve_right(const Tensor& u, const Tensor& x) { return linalg::solve_triangular(u, x, true, false); }
Tensor ut_solve_right(const Tensor& u, const Tensor& x) { return linalg::solve_triangular(u.mT(), x, false, false); }

/** gA of A = P L U from gL [..., m, k] and gU [..., k, n] (torch's linalg_lu_backward). */
Tensor lu_backward(const Tensor& gl, const Tensor& gu, const Tensor& p, const Tensor& l, const Tensor& u) {
  const int64_t m = l.size(-2), n = u.size(-1), k = l.size(-1);
  Tensor ga;
  if (m == n) {  // P L^-T [L^T gL o tril(-1) + gU U^T o triu] U^-T
    ga = tril(matmul(l.mT(), gl), -1) + triu(matmul(gu, u.mT()));
    ga = lt_solve(l, ut_solve_right(u, ga));
  } else if (m < n) {  // A = P L [U1 | U2]
    Tensor u1 = u.narrow(-1, 0, k), gu1 = gu.narrow(-1, 0, k), gu2 = gu.narrow(-1, k, n - k);
    ga = ut_solve_right(u1, tril(matmul(l.mT(), gl) - matmul(triu(gu), u.mT()), -1));
    ga = lt_solve(l, cat({ga + triu(gu1), gu2}, -1));
  } else {  // A = P [L1; L2] U
    Tensor l1 = l.narrow(-2, 0, k), gl1 = gl.narrow(-2, 0, k), gl2 = gl.narrow(-2, k, m - k);
    ga = lt_solve(l1, triu(matmul(gu, u.mT()) - matmul(l.mT(), tril(gl, -1))));
    ga = ut_solve_right(u, cat({ga + tril(gl1, -1), gl2}, -2));
  }
  return matmul(p, ga);
}

/** dLU (dL + dU packed) from dA (torch's linalg_lu_jvp). */
Tensor lu_jvp(const Tensor& da, const Tensor& p, const Tensor& l, const Tensor& u) {
  const int64_t m = l.size(-2), n = u.size(-1), k = l.size(-1);
  Tensor pda = matmul(p.mT(), da);
  if (m == n) {
    Tensor dk = u_solve_right(u, l_solve(l, pda));
    return matmul(l, tril(dk, -1)) + matmul(triu(dk), u);
  }
  if (m < n) {
    Tensor u1 = u.narrow(-1, 0, k), u2 = u.narrow(-1, k, n - k);
    Tensor dk = u_solve_right(u1, l_solve(l, pda.narrow(-1, 0, k)));
    Tensor dl = matmul(l, tril(dk, -1));
    Tensor du2 = l_solve(l, pda.narrow(-1, k, n - k) - matmul(dl, u2));
    return cat({dl + matmul(triu(dk), u1), du2}, -1);
  }
  Tensor l1 = l.narrow(-2, 0, k), l2 = l.narrow(-2, k, m - k);
  Tensor dk = u_solve_right(u, l_solve(l1, pda.narrow(-2, 0, k)));
  Tensor du = matmul(triu(dk), u);
  Tensor dl2 = u_solve_right(u, pda.narrow(-2, k, m - k) - matmul(l2, du));
  return cat({matmul(l1, tril(dk, -1)) + du, dl2}, -2);
}

/** LU, pivots and info of A [..., m, n]; `check`: a zero on U's diagonal raises, naming `op`. */
std::tuple<Tensor, Tensor, Tensor> lu_factor_op(const Tensor& a, bool check, const char* op) {
  graph::OpCall call(kLuFactor);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  Tensor lu, piv, info;
  if (int lvl = batching::level(a)) {
    auto [pl, pp, pi] = lu_factor_op(batching::physical(a, lvl), check, op);
    lu = batching::wrap(pl, lvl);
    piv = batching::wrap(pp, lvl);
    info = batching::wrap(pi, lvl);
  } else {
    lu = empty(a.shape(), like(a));
    piv = empty(with(batch_of(a), {k}), int_like(a, DType::Int32));
    info = zeros(batch_of(a), int_like(a, DType::Int32));
    if (lu.numel() > 0) {
      ops::LinalgStatus s =
          backend_for(a.device())
              .lu_factor(a.reshape({-1, m, n}), lu.view({-1, m, n}), piv.view({-1, k}), info.view({-1}));
      if (check && s.failed())
        fail<linalg::LinAlgError>("[", op, "] ", batch_element(a, s), "U[", s.info, ",", s.info,
                                  "] is zero: the matrix is singular and lu_solve would divide by zero (shape ",
                                  a.shape(), ", dtype ", a.dtype(),
                                  "); linalg.lu and linalg.lu_factor_ex factor it "
                                  "without raising");
    }
  }
  if (call.capturing())
    call.set_replay(
        [check, op](const graph::Tensors& in) {
          auto [lu, piv, info] = lu_factor_op(in[0], check, op);
          return graph::Tensors{lu, piv, info};
        },
        graph::ReplaySizes::None);
  call.finish(
      {&a}, {&lu, &piv, &info}, {graph::output(lu), graph::output(piv)},
      [m, k](graph::Saved s, graph::Tensors&& g) {
        // L's gradient is gLU's first k columns, U's its first k rows (each rule reads its triangle).
        Tensor p = permutation_matrix(s[1], m, s[0]);
        return graph::Tensors{
            lu_backward(g[0].narrow(-1, 0, k), g[0].narrow(-2, 0, k), p, unpack_l(s[0]), unpack_u(s[0]))};
      },
      [&](const graph::Tensors& t) {
        return graph::Tensors{lu_jvp(t[0], permutation_matrix(piv, m, a), unpack_l(lu), unpack_u(lu))};
      });
  return {lu, piv, info};
}

/** The derivative rules of the LDL ops, which torch does not define either. */
[[noreturn]] void no_derivative(const char* op) {
  fail<RuntimeError>("[", op, "] is not differentiable (torch defines no derivative for it either)");
}

std::tuple<Tensor, Tensor, Tensor> ldl_factor_op(const Tensor& a, bool check, const char* op) {
  graph::OpCall call(kLdlFactor);
  const int64_t n = a.size(-1);
  Tensor ld, piv, info;
  if (int lvl = batching::level(a)) {
    auto [pl, pp, pi] = ldl_factor_op(batching::physical(a, lvl), check, op);
    ld = batching::wrap(pl, lvl);
    piv = batching::wrap(pp, lvl);
    info = batching::wrap(pi, lvl);
  } else {
    ld = empty(a.shape(), like(a));
    piv = empty(with(batch_of(a), {n}), int_like(a, DType::Int32));
    info = zeros(batch_of(a), int_like(a, DType::Int32));
    if (ld.numel() > 0) {
      ops::LinalgStatus s =
          backend_for(a.device())
              .ldl_factor(a.reshape({-1, n, n}), ld.view({-1, n, n}), piv.view({-1, n}), info.view({-1}));
      if (check && s.failed())
        fail<linalg::LinAlgError>("[", op, "] ", batch_element(a, s), "D[", s.info, ",", s.info,
                                  "] is zero: the matrix is singular (shape ", a.shape(), ", dtype ", a.dtype(),
                                  "); linalg.ldl_factor_ex factors it without raising");
    }
  }
  if (call.capturing())
    call.set_replay(
        [check, op](const graph::Tensors& in) {
          auto [ld, piv, info] = ldl_factor_op(in[0], check, op);
          return graph::Tensors{ld, piv, info};
        },
        graph::ReplaySizes::None);
  call.finish(
      {&a}, {&ld, &piv, &info}, {}, [op](graph::Saved, graph::Tensors&&) -> graph::Tensors { no_derivative(op); },
      [op](const graph::Tensors&) -> graph::Tensors { no_derivative(op); });
  return {ld, piv, info};
}

/** X = A^-1 B for A given by ldl_factor, with equal batch dims. */
Tensor ldl_solve_op(const Tensor& ld, const Tensor& piv, const Tensor& b) {
  graph::OpCall call(kLdlSolve);
  Tensor x;
  if (int lvl = batching::max_level({&ld, &piv, &b})) {
    auto p = physical_operands({&ld, &piv, &b}, lvl);
    x = batching::wrap(ldl_solve_op(p[0], p[1], p[2]), lvl);
  } else {
    x = empty(b.shape(), like(b));
    const int64_t n = ld.size(-1), k = b.size(-1);
    if (x.numel() > 0)
      backend_for(ld.device())
          .ldl_solve(ld.reshape({-1, n, n}), piv.reshape({-1, n}), b.reshape({-1, n, k}), x.view({-1, n, k}));
  }
  if (call.capturing())
    call.set_replay([](const graph::Tensors& in) { return graph::Tensors{ldl_solve_op(in[0], in[1], in[2])}; },
                    graph::ReplaySizes::None);
  call.finish(
      {&ld, &piv, &b}, {&x}, {},
      [](graph::Saved, graph::Tensors&&) -> graph::Tensors { no_derivative("linalg.ldl_solve"); },
      [](const graph::Tensors&) -> graph::Tensors { no_derivative("linalg.ldl_solve"); });
  return x;
}

void check_pivot(bool pivot, const char* op) {
  if (!pivot) fail("[", op, "] LU without pivoting is not implemented on the CPU");
}

/** Checks lu_solve's and lu_unpack's LU [..., m, n] and pivots [..., min(m, n)] (int32). */
void check_lu(const Tensor& lu, const Tensor& pivots, const char* op, bool square) {
  check_matrix(lu, op, square);
  if (pivots.dtype() != DType::Int32)
    fail<TypeError>("[", op, "] expected int32 pivots (as lu_factor gives them), got ", pivots.dtype());
  const int64_t k = std::min(lu.size(-2), lu.size(-1));
  if (pivots.dim() != lu.dim() - 1 || pivots.size(-1) != k ||
      Shape(pivots.shape().begin(), pivots.shape().end() - 1) != batch_of(lu))
    fail("[", op, "] expected pivots of shape ", with(batch_of(lu), {k}), " for LU of shape ", lu.shape(), ", got ",
         pivots.shape());
}

/** Whether b is a vector (or a batch of them) against A [..., n, n], as solve takes it. */
bool is_vector(const Tensor& a, const Tensor& b) {
  return b.dim() == 1 || (b.dim() == a.dim() - 1 && b.shape() == with(batch_of(a), {a.size(-1)}));
}

}  // namespace

linalg::LuResult lu_unpack(const Tensor& lu, const Tensor& pivots, bool unpack_data, bool unpack_pivots) {
  check_lu(lu, pivots, "lu_unpack", false);
  const Tensor none = empty({0}, like(lu));
  return {unpack_pivots ? permutation_matrix(pivots, lu.size(-2), lu) : none, unpack_data ? unpack_l(lu) : none,
          unpack_data ? unpack_u(lu) : none};
}

namespace linalg {

LuFactorExResult lu_factor_ex(const Tensor& a, bool pivot, bool check_errors) {
  check_matrix(a, "linalg.lu_factor_ex", false);
  check_pivot(pivot, "linalg.lu_factor_ex");
  auto [lu, piv, info] = lu_factor_op(a, check_errors, "linalg.lu_factor_ex");
  return {lu, piv, info};
}

LuFactorResult lu_factor(const Tensor& a, bool pivot) {
  check_matrix(a, "linalg.lu_factor", false);
  check_pivot(pivot, "linalg.lu_factor");
  auto [lu, piv, info] = lu_factor_op(a, true, "linalg.lu_factor");
  return {lu, piv};
}

LuResult lu(const Tensor& a, bool pivot) {
  check_matrix(a, "linalg.lu", false);
  check_pivot(pivot, "linalg.lu");
  auto [lu, piv, info] = lu_factor_op(a, false, "linalg.lu");
  return ug::lu_unpack(lu, piv);
}

Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left, bool adjoint) {
  check_lu(lu, pivots, "linalg.lu_solve", true);
  check_matrix(b, "linalg.lu_solve", false);
  check_pair(lu, b, "linalg.lu_solve");
  if (!left) return lu_solve(lu, pivots, b.mT(), true, !adjoint).mT();
  const int64_t n = lu.size(-1);
  if (b.size(-2) != n)
    fail("[linalg.lu_solve] incompatible shapes of LU and B for the equation AX = B: ", lu.shape(), " and ", b.shape(),
         " (dtype ", b.dtype(), ")");
  Tensor p = permutation_matrix(pivots, n, lu);
  if (!adjoint)  // X = U^-1 L^-1 P^T B
    return solve_triangular(lu, l_solve(lu, matmul(p.mT(), b)), true);
  // A^T = U^T L^T P^T: X = P L^-T U^-T B
  return matmul(p, lt_solve(lu, solve_triangular(lu.mT(), b, false)));
}

SolveExResult solve_ex(const Tensor& a, const Tensor& b, bool left, bool check_errors) {
  check_matrix(a, "linalg.solve_ex");
  check_pair(a, b, "linalg.solve_ex");
  if (b.dim() < 1 || (!is_vector(a, b) && b.dim() < 2))
    fail("[linalg.solve_ex] expected B to be a vector or a batch of matrices, got shape ", b.shape());
  auto [lu, piv, info] = lu_factor_op(a, check_errors, "linalg.solve_ex");
  if (is_vector(a, b)) return {lu_solve(lu, piv, b.unsqueeze(-1), left).squeeze(Dims{-1}), info};
  return {lu_solve(lu, piv, b, left), info};
}

InvExResult inv_ex(const Tensor& a, bool check_errors) {
  check_matrix(a, "linalg.inv_ex");
  auto [lu, piv, info] = lu_factor_op(a, check_errors, "linalg.inv_ex");
  return {lu_solve(lu, piv, eye(a.size(-1), {}, like(a)).expand(a.shape())), info};
}

LdlFactorExResult ldl_factor_ex(const Tensor& a, bool hermitian, bool check_errors) {
  (void)hermitian;  // real matrices: symmetric is hermitian
  check_matrix(a, "linalg.ldl_factor_ex");
  auto [ld, piv, info] = ldl_factor_op(a, check_errors, "linalg.ldl_factor_ex");
  return {ld, piv, info};
}

LdlFactorResult ldl_factor(const Tensor& a, bool hermitian) {
  (void)hermitian;
  check_matrix(a, "linalg.ldl_factor");
  auto [ld, piv, info] = ldl_factor_op(a, true, "linalg.ldl_factor");
  return {ld, piv};
}

Tensor ldl_solve(const Tensor& ld, const Tensor& pivots, const Tensor& b, bool hermitian) {
  (void)hermitian;
  check_lu(ld, pivots, "linalg.ldl_solve", true);
  check_matrix(b, "linalg.ldl_solve", false);
  check_pair(ld, b, "linalg.ldl_solve");
  const int64_t n = ld.size(-1);
  if (b.size(-2) != n)
    fail("[linalg.ldl_solve] incompatible shapes of LD and B for the equation AX = B: ", ld.shape(), " and ", b.shape(),
         " (dtype ", b.dtype(), ")");
  Shape batch = broadcast_batch(ld, b, "linalg.ldl_solve");
  return ldl_solve_op(ld.expand(with(batch, {n, n})), pivots.expand(with(batch, {n})),
                      b.expand(with(batch, {n, b.size(-1)})));
}

Tensor cond(const Tensor& a, std::optional<double> p) {
  check_matrix(a, "linalg.cond", !(!p || std::abs(*p) == 2));
  if (!p || std::abs(*p) == 2) {
    Tensor s = svdvals(a);
    const int64_t k = s.size(-1);
    Tensor largest = s.narrow(-1, 0, 1).squeeze(Dims{-1}), smallest = s.narrow(-1, k - 1, 1).squeeze(Dims{-1});
    return !p || *p > 0 ? largest / smallest : smallest / largest;
  }
  auto [inverse, info] = inv_ex(a);
  return where(info != 0, std::numeric_limits<double>::infinity(), matrix_norm(a, *p) * matrix_norm(inverse, *p));
}

Tensor cond(const Tensor& a, std::string_view p) {
  check_matrix(a, "linalg.cond");
  if (p != "fro" && p != "nuc") fail("[linalg.cond] p must be 'fro', 'nuc' or a number, got '", p, "'");
  auto [inverse, info] = inv_ex(a);
  return where(info != 0, std::numeric_limits<double>::infinity(), matrix_norm(a, p) * matrix_norm(inverse, p));
}

Tensor householder_product(const Tensor& a, const Tensor& tau) {
  check_matrix(a, "linalg.householder_product", false);
  check_pair(a, tau, "linalg.householder_product");
  const int64_t m = a.size(-2), n = a.size(-1), k = tau.dim() > 0 ? tau.size(-1) : -1;
  if (m < n)
    fail("[linalg.householder_product] expected A with at least as many rows as columns, got shape ", a.shape());
  if (tau.dim() != a.dim() - 1 || k > n || Shape(tau.shape().begin(), tau.shape().end() - 1) != batch_of(a))
    fail("[linalg.householder_product] expected tau of shape [..., k] with A's batch dims and k <= ", n,
         " for A of shape ", a.shape(), ", got ", tau.shape());
  const Tensor rows = arange(m, int_like(a, DType::Int64));
  // Q = H_1 (H_2 (... (H_k I[:, :n]))): each reflector applied to the product so far.
  Tensor q = eye(m, n, like(a)).expand(a.shape());
  for (int64_t i = k - 1; i >= 0; --i) {
    Tensor v = where(rows == i, 1.0, where(rows > i, a.narrow(-1, i, 1).squeeze(Dims{-1}), 0.0));
    Tensor t = tau.narrow(-1, i, 1).unsqueeze(-1);
    q = q - t * v.unsqueeze(-1) * matmul(v.unsqueeze(-2), q);
  }
  return q;
}

Tensor tensorinv(const Tensor& a, int64_t ind) {
  if (ind <= 0) fail("[linalg.tensorinv] expected a strictly positive ind, got ", ind);
  if (ind > a.dim()) fail("[linalg.tensorinv] ind ", ind, " exceeds the dims of A (shape ", a.shape(), ")");
  Shape out(a.shape().begin() + ind, a.shape().end());
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < a.dim(); ++i) (i < ind ? rows : cols) *= a.size(i);
  if (rows != cols)
    fail("[linalg.tensorinv] expected prod(A.shape[:ind]) == prod(A.shape[ind:]), got ", rows, " and ", cols,
         " (shape ", a.shape(), ", ind ", ind, ")");
  for (int64_t i = 0; i < ind; ++i) out.push_back(a.size(i));
  return inv(a.reshape({rows, cols})).reshape(out);
}

Tensor tensorsolve(const Tensor& a0, const Tensor& b, const std::optional<Dims>& dims) {
  Tensor a = a0;
  if (dims) {  // move them last, in order
    Dims src, dst;
    for (size_t i = 0; i < dims->size(); ++i) {
      src.push_back((*dims)[i]);
      dst.push_back(a.dim() - static_cast<int64_t>(dims->size()) + static_cast<int64_t>(i));
    }
    a = movedim(a, src, dst);
  }
  if (b.dim() > a.dim())
    fail("[linalg.tensorsolve] expected B of at most A's dims, got shapes ", a.shape(), " and ", b.shape());
  Shape out(a.shape().begin() + b.dim(), a.shape().end());
  int64_t cols = 1;
  for (int64_t d : out) cols *= d;
  if (cols != b.numel() || a.numel() != cols * cols)
    fail("[linalg.tensorsolve] expected A's dims after B's first ", b.dim(), " to hold B's ", b.numel(),
         " elements, and A's first ", b.dim(), " as many, got shapes ", a.shape(), " and ", b.shape());
  return solve(a.reshape({b.numel(), cols}), b.reshape({b.numel()})).reshape(out);
}

Tensor vander(const Tensor& x, std::optional<int64_t> n) {
  if (x.dim() < 1) fail("[linalg.vander] expected a tensor of at least 1 dim, got shape ", x.shape());
  const int64_t cols = n.value_or(x.size(-1));
  if (cols <= 1) fail("[linalg.vander] N must be greater than 1, got ", cols);
  Shape out = x.shape();
  out.push_back(cols);
  return ug::vander(x.reshape({-1}), cols, true).reshape(out);
}

Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim) {
  if (x.dtype() != y.dtype())
    fail<TypeError>("[linalg.vecdot] expected x and y of one dtype, got ", x.dtype(), " and ", y.dtype());
  return (conj(x) * y).sum(Dims{dim});  // x^H y, as torch's
}

Tensor diagonal(const Tensor& a, int64_t offset, int64_t dim1, int64_t dim2) { return a.diagonal(offset, dim1, dim2); }

}  // namespace linalg

}  // namespace ug
