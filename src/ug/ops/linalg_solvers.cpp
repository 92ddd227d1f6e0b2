// torch.linalg's decompositions and solvers. Seven ops call the backend's LAPACK kernels and
// carry derivative rules: linalg_solve (inv is a solve against the identity), linalg_slogdet
// (det and logdet are made from it), linalg_cholesky, linalg_eigh, linalg_svd, linalg_qr and
// linalg_solve_triangular. Each takes matrices in its last two dims with equal batch dims in
// front (the public functions broadcast them), so the vmap rule of each is the op called again
// on the physical tensors, whose vmap dim is one more batch dim. The rules are written with
// these ops, so derivatives of derivatives work; they are torch's (FunctionsManual.cpp) for
// real matrices, solve's for complex ones too. None has an ONNX form: a compiled program calls
// each back. The rest (pinv, lstsq, norms, ...) are compositions; eig is in linalg_eig.cpp.
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ug/backend/backend.h"
#include "ug/core/value_read.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/linalg_common.h"
#include "ug/ops/reduce.h"

namespace ug {

using namespace linalg_detail;

namespace {

const graph::OpDef kSolve("linalg_solve");
const graph::OpDef kSlogdet("linalg_slogdet");
const graph::OpDef kCholesky("linalg_cholesky");
const graph::OpDef kEigh("linalg_eigh");
const graph::OpDef kSvd("linalg_svd");
const graph::OpDef kQr("linalg_qr");
const graph::OpDef kSolveTriangular("linalg_solve_triangular");

// ---- the ops with kernels --------------------------------------------------------------------

/** X = A^-1 B for A [..., n, n] and B [..., n, k] with equal batch dims; `op` names the public
 *  function in errors. */
Tensor solve_op(const Tensor& a, const Tensor& b, const char* op) {
  graph::OpCall call(kSolve);
  Tensor x;
  if (int lvl = batching::max_level({&a, &b})) {
    auto p = physical_operands({&a, &b}, lvl);
    x = batching::wrap(solve_op(p[0], p[1], op), lvl);
  } else {
    x = empty(b.shape(), like(b));
    const int64_t n = a.size(-1), k = b.size(-1);
    if (x.numel() > 0) {
      ops::LinalgStatus s =
          backend_for(a.device()).solve(a.reshape({-1, n, n}), b.reshape({-1, n, k}), x.view({-1, n, k}));
      if (s.failed())
        fail<linalg::LinAlgError>("[", op, "] ", batch_element(a, s), "the input matrix is singular: pivot ", s.info,
                                  " of its LU factorization is zero (A shape ", a.shape(), ", dtype ", a.dtype(), ")");
    }
  }
  if (call.capturing())
    call.set_replay([op](const graph::Tensors& in) { return graph::Tensors{solve_op(in[0], in[1], op)}; },
                    graph::ReplaySizes::None);
  call.finish(
      {&a, &b}, {&x}, {graph::input(a), graph::output(x)},
      [op](graph::Saved s, graph::Tensors&& g) {
        Tensor gb = solve_op(mH(s[0]), g[0], op);
        return graph::Tensors{-matmul(gb, mH(s[1])), gb};
      },
      [&](const graph::Tensors& t) {
        Tensor rhs = t[1].defined() ? t[1] : zeros_like(x);
        if (t[0].defined()) rhs = rhs - matmul(t[0], x);
        return graph::Tensors{solve_op(a, rhs, op)};
      });
  return x;
}

/** X = A^-1 B for triangular A [..., n, n] (the upper or lower triangle read; unit: ones on
 *  its diagonal) and B [..., n, k] with equal batch dims. */
Tensor solve_triangular_op(const Tensor& a, const Tensor& b, bool upper, bool unit) {
  graph::OpCall call(kSolveTriangular);
  Tensor x;
  if (int lvl = batching::max_level({&a, &b})) {
    auto p = physical_operands({&a, &b}, lvl);
    x = batching::wrap(solve_triangular_op(p[0], p[1], upper, unit), lvl);
  } else {
    x = empty(b.shape(), like(b));
    const int64_t n = a.size(-1), k = b.size(-1);
    if (x.numel() > 0)
      backend_for(a.device())
          .solve_triangular(a.reshape({-1, n, n}), b.reshape({-1, n, k}), upper, unit, x.view({-1, n, k}));
  }
  // Only the triangle the kernel reads has a derivative.
  auto triangle = [upper, unit](const Tensor& t) { return upper ? triu(t, unit ? 1 : 0) : tril(t, unit ? -1 : 0); };
  if (call.capturing())
    call.set_replay(
        [upper, unit](const graph::Tensors& in) {
          return graph::Tensors{solve_triangular_op(in[0], in[1], upper, unit)};
        },
        graph::ReplaySizes::None);
  call.finish(
      {&a, &b}, {&x}, {graph::input(a), graph::output(x)},
      [upper, unit, triangle](graph::Saved s, graph::Tensors&& g) {
        Tensor gb = solve_triangular_op(s[0].mT(), g[0], !upper, unit);
        return graph::Tensors{triangle(-matmul(gb, s[1].mT())), gb};
      },
      [&](const graph::Tensors& t) {
        Tensor rhs = t[1].defined() ? t[1] : zeros_like(x);
        if (t[0].defined()) rhs = rhs - matmul(triangle(t[0]), x);
        return graph::Tensors{solve_triangular_op(a, rhs, upper, unit)};
      });
  return x;
}

std::pair<Tensor, Tensor> slogdet_op(const Tensor& a) {
  graph::OpCall call(kSlogdet);
  Tensor sign, logabsdet;
  if (int lvl = batching::level(a)) {
    auto [s, l] = slogdet_op(batching::physical(a, lvl));
    sign = batching::wrap(s, lvl);
    logabsdet = batching::wrap(l, lvl);
  } else {
    sign = empty(batch_of(a), like(a));
    logabsdet = empty(batch_of(a), like(a));
    const int64_t n = a.size(-1);
    if (n == 0) {  // the empty product
      sign.fill_(1);
      logabsdet.fill_(0);
    } else if (sign.numel() > 0) {
      backend_for(a.device()).slogdet(a.reshape({-1, n, n}), sign.view({-1}), logabsdet.view({-1}));
    }
  }
  if (call.capturing())
    call.set_replay(
        [](const graph::Tensors& in) {
          auto [s, l] = slogdet_op(in[0]);
          return graph::Tensors{s, l};
        },
        graph::ReplaySizes::None);
  // d log|det A| = tr(A^-1 dA); the sign is piecewise constant.
  call.finish(
      {&a}, {&sign, &logabsdet}, {graph::input(a)},
      [](graph::Saved s, graph::Tensors&& g) {
        return graph::Tensors{g[1].unsqueeze(-1).unsqueeze(-1) * linalg::inv(s[0]).mT()};
      },
      [&](const graph::Tensors& t) {
        return graph::Tensors{zeros_like(sign), solve_op(a, t[0], "linalg.slogdet").diagonal(0, -2, -1).sum(Dims{-1})};
      });
  return {sign, logabsdet};
}

/** Phi(X): the lower triangle of X with its diagonal halved. */
Tensor phi(const Tensor& x) { return tril(x, -1) + diag_embed(x.diagonal(0, -2, -1) * 0.5); }

/** L and each matrix's LAPACK info (int32: 0, or the order of the leading minor that is not
 *  positive-definite); `check`: such a matrix raises instead, naming `op`. */
std::pair<Tensor, Tensor> cholesky_op(const Tensor& a, bool check, const char* op) {
  graph::OpCall call(kCholesky);
  Tensor l, info;
  if (int lvl = batching::level(a)) {
    auto [pl, pinfo] = cholesky_op(batching::physical(a, lvl), check, op);
    l = batching::wrap(pl, lvl);
    info = batching::wrap(pinfo, lvl);
  } else {
    l = empty(a.shape(), like(a));
    info = zeros(batch_of(a), {.dtype = DType::Int32, .device = a.device()});
    const int64_t n = a.size(-1);
    if (l.numel() > 0) {
      ops::LinalgStatus s =
          backend_for(a.device()).cholesky(a.reshape({-1, n, n}), l.view({-1, n, n}), info.view({-1}));
      if (check && s.failed())
        fail<linalg::LinAlgError>("[", op, "] ", batch_element(a, s),
                                  "the input is not positive-definite: its leading minor of order ", s.info,
                                  " is not (shape ", a.shape(), ", dtype ", a.dtype(), ")");
    }
  }
  if (call.capturing())
    call.set_replay(
        [check, op](const graph::Tensors& in) {
          auto [l, info] = cholesky_op(in[0], check, op);
          return graph::Tensors{l, info};
        },
        graph::ReplaySizes::None);
  call.finish(
      {&a}, {&l, &info}, {graph::output(l)},
      [](graph::Saved s, graph::Tensors&& g) {
        // gA = L^-T Phi'(L^T gL) L^-1 with the symmetric Phi' torch uses (Murray, arXiv 1602.07527).
        const Tensor& L = s[0];
        Tensor p = tril(matmul(L.mT(), g[0]));
        p = (p + tril(p, -1).mT()) * 0.5;
        Tensor left = solve_triangular_op(L.mT(), p, /*upper=*/true, false);             // L^-T P
        Tensor ga = solve_triangular_op(L.mT(), left.mT(), /*upper=*/true, false).mT();  // (L^-T P) L^-1
        return graph::Tensors{ga};
      },
      [&](const graph::Tensors& t) {
        // dL = L Phi(L^-1 dA L^-T).
        Tensor left = solve_triangular_op(l, t[0], false, false);
        Tensor both = solve_triangular_op(l, left.mT(), false, false).mT();
        return graph::Tensors{matmul(l, phi(both))};
      });
  return {l, info};
}

std::pair<Tensor, Tensor> eigh_op(const Tensor& a) {
  graph::OpCall call(kEigh);
  Tensor w, v;
  if (int lvl = batching::level(a)) {
    auto [pw, pv] = eigh_op(batching::physical(a, lvl));
    w = batching::wrap(pw, lvl);
    v = batching::wrap(pv, lvl);
  } else {
    const int64_t n = a.size(-1);
    w = empty(with(batch_of(a), {n}), like(a));
    v = empty(a.shape(), like(a));
    if (v.numel() > 0) {
      ops::LinalgStatus s = backend_for(a.device()).eigh(a.reshape({-1, n, n}), w.view({-1, n}), v.view({-1, n, n}));
      if (s.failed())
        fail<linalg::LinAlgError>("[linalg.eigh] ", batch_element(a, s), "the algorithm failed to converge (", s.info,
                                  " off-diagonal elements did not), shape ", a.shape(), ", dtype ", a.dtype());
    }
  }
  if (call.capturing())
    call.set_replay(
        [](const graph::Tensors& in) {
          auto [w, v] = eigh_op(in[0]);
          return graph::Tensors{w, v};
        },
        graph::ReplaySizes::None);
  call.finish(
      {&a}, {&w, &v}, {graph::output(w), graph::output(v)},
      [](graph::Saved s, graph::Tensors&& g) {
        const Tensor &w = s[0], &V = s[1];
        Tensor vg = matmul(V.mT(), g[1]);
        Tensor inner = (vg - vg.mT()) * 0.5 / gaps(w) + diag_embed(g[0]);
        return graph::Tensors{matmul(V, matmul(inner, V.mT()))};
      },
      [&](const graph::Tensors& t) {
        // dP = V^T dA V: dw = diag(dP), dV = V (dP / E) off the diagonal.
        Tensor dp = matmul(v.mT(), matmul(t[0], v));
        Tensor off = off_diagonal(dp / gaps(w));
        return graph::Tensors{dp.diagonal(0, -2, -1), matmul(v, off)};
      });
  return {w, v};
}

std::tuple<Tensor, Tensor, Tensor> svd_op(const Tensor& a, bool full) {
  graph::OpCall call(kSvd);
  Tensor u, s, vh;
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  if (int lvl = batching::level(a)) {
    auto [pu, ps, pvh] = svd_op(batching::physical(a, lvl), full);
    u = batching::wrap(pu, lvl);
    s = batching::wrap(ps, lvl);
    vh = batching::wrap(pvh, lvl);
  } else {
    u = empty(with(batch_of(a), {m, full ? m : k}), like(a));
    s = empty(with(batch_of(a), {k}), like(a));
    vh = empty(with(batch_of(a), {full ? n : k, n}), like(a));
    if (k == 0) {  // no singular values: the factors that remain are identities
      u.copy_(eye(m, u.size(-1), like(a)).expand(u.shape()));
      vh.copy_(eye(vh.size(-2), n, like(a)).expand(vh.shape()));
    } else if (s.numel() > 0) {
      ops::LinalgStatus st =
          backend_for(a.device())
              .svd(a.reshape({-1, m, n}), u.view({-1, m, u.size(-1)}), s.view({-1, k}), vh.view({-1, vh.size(-2), n}));
      if (st.failed())
        fail<linalg::LinAlgError>("[linalg.svd] ", batch_element(a, st), "the algorithm failed to converge (shape ",
                                  a.shape(), ", dtype ", a.dtype(), ")");
    }
  }
  if (call.capturing())
    call.set_replay(
        [full](const graph::Tensors& in) {
          auto [u, s, vh] = svd_op(in[0], full);
          return graph::Tensors{u, s, vh};
        },
        graph::ReplaySizes::None);
  call.finish(
      {&a}, {&u, &s, &vh}, {graph::output(u), graph::output(s), graph::output(vh)},
      [m, n, k](graph::Saved saved, graph::Tensors&& g) {
        // torch's svd_backward; with full matrices only the first k columns of U and rows of
        // Vh have a derivative (the rest are any basis of the complement).
        Tensor U = saved[0].narrow(-1, 0, k), S = saved[1], Vh = saved[2].narrow(-2, 0, k);
        Tensor gU = g[0].narrow(-1, 0, k), gS = g[1], gVh = g[2].narrow(-2, 0, k);
        Tensor uu = matmul(U.mT(), gU), vv = matmul(Vh, gVh.mT());
        uu = uu - uu.mT();
        vv = vv - vv.mT();
        Tensor ga = (uu * S.unsqueeze(-2) + S.unsqueeze(-1) * vv) / gaps(S * S) + diag_embed(gS);
        if (m > k) {
          Tensor gus = gU / S.unsqueeze(-2);
          ga = matmul(matmul(U, ga) + gus - matmul(U, matmul(U.mT(), gus)), Vh);
        } else if (n > k) {
          Tensor svh = gVh / S.unsqueeze(-1);
          ga = matmul(U, matmul(ga, Vh) + svh - matmul(matmul(svh, Vh.mT()), Vh));
        } else {
          ga = matmul(U, matmul(ga, Vh));
        }
        return graph::Tensors{ga};
      },
      [&](const graph::Tensors& t) {
        if (full && m != n)
          fail("[linalg.svd] forward mode needs full_matrices=False for non-square input (shape ", a.shape(), ")");
        // dP = U^T dA V: dS = diag(dP), U^T dU = (dP S + S dP^T) / E, V^T dV = (S dP + dP^T S) / E
        // (E[i, j] = s_j^2 - s_i^2), plus the parts of dU and dV outside U's and V's spans.
        Tensor V = vh.mT();
        Tensor da = t[0];
        Tensor dp = matmul(u.mT(), matmul(da, V));
        Tensor e = gaps(s * s);
        Tensor offdiag = 1 - eye(k, {}, like(s));
        Tensor ds = dp.diagonal(0, -2, -1);
        Tensor su = s.unsqueeze(-2), sc = s.unsqueeze(-1);
        Tensor du = matmul(u, (dp * su + sc * dp.mT()) / e * offdiag);
        Tensor dv = matmul(V, (sc * dp + dp.mT() * su) / e * offdiag);
        if (m > k) {
          Tensor r = matmul(da, V) / su;
          du = du + r - matmul(u, matmul(u.mT(), r));
        }
        if (n > k) {
          Tensor r = matmul(da.mT(), u) / su;
          dv = dv + r - matmul(V, matmul(V.mT(), r));
        }
        return graph::Tensors{du, ds, dv.mT()};
      });
  return {u, s, vh};
}

/** copyltu(M): the lower triangle of M mirrored into the upper one. */
Tensor copyltu(const Tensor& m) { return tril(m) + tril(m, -1).mT(); }

/** The gradient of A = Q R for square or tall A (R square): (gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T. */
Tensor qr_backward_tall(const Tensor& q, const Tensor& r, const Tensor& gq, const Tensor& gr) {
  Tensor lhs = gq + matmul(q, copyltu(matmul(r, gr.mT()) - matmul(gq.mT(), q)));
  return solve_triangular_op(r, lhs.mT(), /*upper=*/true, false).mT();
}

std::pair<Tensor, Tensor> qr_op(const Tensor& a, std::string_view mode) {
  graph::OpCall call(kQr);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const bool complete = mode == "complete", r_only = mode == "r";
  Tensor q, r;
  if (int lvl = batching::level(a)) {
    auto [pq, pr] = qr_op(batching::physical(a, lvl), mode);
    q = r_only ? pq : batching::wrap(pq, lvl);
    r = batching::wrap(pr, lvl);
  } else {
    const int64_t c = complete ? m : k;
    q = r_only ? empty({0}, like(a)) : empty(with(batch_of(a), {m, c}), like(a));
    r = empty(with(batch_of(a), {c, n}), like(a));
    if (a.numel() > 0) {
      backend_for(a.device()).qr(a.reshape({-1, m, n}), r_only ? Tensor() : q.view({-1, m, c}), r.view({-1, c, n}));
    } else {
      r.fill_(0);
      if (!r_only) q.copy_(eye(m, c, like(a)).expand(q.shape()));
    }
  }
  if (call.capturing())
    call.set_replay(
        [mode = std::string(mode)](const graph::Tensors& in) {
          auto [q, r] = qr_op(in[0], mode);
          return graph::Tensors{q, r};
        },
        graph::ReplaySizes::None);
  call.finish(
      {&a}, {&q, &r}, {graph::output(q), graph::output(r)},
      [m, n, complete, r_only](graph::Saved s, graph::Tensors&& g) {
        if (r_only) fail("[linalg.qr] the derivative needs Q: use mode='reduced'");
        if (complete && m > n)
          fail("[linalg.qr] the QR decomposition is not differentiable when mode='complete' and m > n");
        const Tensor &Q = s[0], &R = s[1];
        if (m >= n) return graph::Tensors{qr_backward_tall(Q, R, g[0], g[1])};
        // A = [X | Y] with X = Q R1 and Y = Q R2: Y's part of R depends on Q as well.
        Tensor r1 = R.narrow(-1, 0, m), r2 = R.narrow(-1, m, n - m);
        Tensor gr1 = g[1].narrow(-1, 0, m), gr2 = g[1].narrow(-1, m, n - m);
        Tensor y = matmul(Q, r2);
        Tensor gx = qr_backward_tall(Q, r1, g[0] + matmul(y, gr2.mT()), gr1);
        return graph::Tensors{cat({gx, matmul(Q, gr2)}, -1)};
      },
      [&](const graph::Tensors& t) {
        if (r_only || m < n || (complete && m > n))
          fail("[linalg.qr] forward mode needs mode='reduced' and m >= n (shape ", a.shape(), ")");
        // C = Q^T dA R^-1 = Q^T dQ + dR R^-1: the strictly lower part is Q^T dQ's (skew).
        Tensor dar = solve_triangular_op(r.mT(), t[0].mT(), /*upper=*/false, false).mT();  // dA R^-1
        Tensor c = matmul(q.mT(), dar);
        Tensor low = tril(c, -1);
        Tensor omega = low - low.mT();
        Tensor dr = matmul(c - omega, r);
        Tensor dq = dar - matmul(q, c - omega);
        return graph::Tensors{dq, dr};
      });
  return {q, r};
}

}  // namespace

Tensor cholesky_solve(const Tensor& b, const Tensor& l, bool upper) {
  check_matrix(l, "cholesky_solve");
  check_matrix(b, "cholesky_solve", false);
  check_pair(l, b, "cholesky_solve");
  return upper ? linalg::solve_triangular(l, linalg::solve_triangular(l.mT(), b, false), true)
               : linalg::solve_triangular(l.mT(), linalg::solve_triangular(l, b, false), true);
}

namespace linalg {

Tensor inv(const Tensor& a) {
  check_matrix(a, "linalg.inv", true, /*complex_ok=*/true);
  return solve_op(a, eye(a.size(-1), {}, like(a)).expand(a.shape()), "linalg.inv");
}

SlogdetResult slogdet(const Tensor& a) {
  check_matrix(a, "linalg.slogdet");
  auto [sign, logabsdet] = slogdet_op(a);
  return {sign, logabsdet};
}

Tensor det(const Tensor& a) {
  check_matrix(a, "linalg.det");
  auto [sign, logabsdet] = slogdet_op(a);
  return sign * logabsdet.exp();
}

Tensor solve(const Tensor& a, const Tensor& b, bool left) {
  check_matrix(a, "linalg.solve", true, /*complex_ok=*/true);
  check_pair(a, b, "linalg.solve");
  const bool vector = b.dim() == 1 || (b.dim() == a.dim() - 1 && b.shape() == with(batch_of(a), {a.size(-1)}));
  if (b.dim() < 1 || (!vector && b.dim() < 2))
    fail("[linalg.solve] expected B to be a vector or a batch of matrices, got shape ", b.shape());
  if (vector) return solve(a, b.unsqueeze(-1), left).squeeze(Dims{-1});
  if (!left) return solve(a.mT(), b.mT(), true).mT();
  const int64_t n = a.size(-1);
  if (b.size(-2) != n)
    fail("[linalg.solve] incompatible shapes of A and B for the equation AX = B: ", a.shape(), " and ", b.shape(),
         " (dtype ", a.dtype(), ")");
  Shape batch = broadcast_batch(a, b, "linalg.solve");
  return solve_op(a.expand(with(batch, {n, n})), b.expand(with(batch, {n, b.size(-1)})), "linalg.solve");
}

Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left, bool unitriangular) {
  check_matrix(a, "linalg.solve_triangular");
  check_matrix(b, "linalg.solve_triangular", false);
  check_pair(a, b, "linalg.solve_triangular");
  if (!left) return solve_triangular(a.mT(), b.mT(), !upper, true, unitriangular).mT();
  const int64_t n = a.size(-1);
  if (b.size(-2) != n)
    fail("[linalg.solve_triangular] incompatible shapes of A and B for the equation AX = B: ", a.shape(), " and ",
         b.shape(), " (dtype ", a.dtype(), ")");
  Shape batch = broadcast_batch(a, b, "linalg.solve_triangular");
  return solve_triangular_op(a.expand(with(batch, {n, n})), b.expand(with(batch, {n, b.size(-1)})), upper,
                             unitriangular);
}

Tensor cholesky(const Tensor& a, bool upper) {
  check_matrix(a, "linalg.cholesky");
  return upper ? cholesky_op(a.mT(), true, "linalg.cholesky").first.mT()
               : cholesky_op(a, true, "linalg.cholesky").first;
}

CholeskyExResult cholesky_ex(const Tensor& a, bool upper, bool check_errors) {
  check_matrix(a, "linalg.cholesky_ex");
  auto [l, info] = cholesky_op(upper ? a.mT() : a, check_errors, "linalg.cholesky_ex");
  return {upper ? l.mT() : l, info};
}

QrResult qr(const Tensor& a, std::string_view mode) {
  check_matrix(a, "linalg.qr", false);
  if (mode != "reduced" && mode != "complete" && mode != "r")
    fail("[linalg.qr] mode must be 'reduced', 'complete' or 'r', got '", mode, "'");
  auto [q, r] = qr_op(a, mode);
  return {q, r};
}

EighResult eigh(const Tensor& a, std::string_view uplo) {
  check_matrix(a, "linalg.eigh");
  if (uplo != "L" && uplo != "U") fail("[linalg.eigh] UPLO must be 'L' or 'U', got '", uplo, "'");
  auto [w, v] = eigh_op(uplo == "L" ? a : a.mT());
  return {w, v};
}

Tensor eigvalsh(const Tensor& a, std::string_view uplo) { return eigh(a, uplo).eigenvalues; }

SvdResult svd(const Tensor& a, bool full_matrices) {
  check_matrix(a, "linalg.svd", false);
  auto [u, s, vh] = svd_op(a, full_matrices);
  return {u, s, vh};
}

Tensor svdvals(const Tensor& a) {
  check_matrix(a, "linalg.svdvals", false);
  return std::get<1>(svd_op(a, false));
}

namespace {

/** pinv's and matrix_rank's threshold for singular values s [..., k] of an m x n matrix. */
Tensor threshold(const Tensor& s, int64_t m, int64_t n, std::optional<double> atol, std::optional<double> rtol) {
  const double eps =
      s.dtype() == DType::Float32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  const double r = rtol.value_or(atol.has_value() && *atol > 0 ? 0.0 : eps * static_cast<double>(std::max(m, n)));
  Tensor largest = s.size(-1) > 0 ? s.amax(Dims{-1}, true) : zeros(with(batch_of(s.unsqueeze(-1)), {1}), like(s));
  return clamp(largest * r, atol.value_or(0.0), std::nullopt);
}

/** Singular values (eigenvalue magnitudes when hermitian) and the factors pinv needs. */
struct Spectrum {
  Tensor left, values, right;  // a = left diag(values) right, up to signs when hermitian
};

Spectrum spectrum(const Tensor& a, bool hermitian) {
  if (!hermitian) {
    auto [u, s, vh] = svd_op(a, false);
    return {u, s, vh};
  }
  auto [w, v] = eigh_op(a);
  return {v * w.sign().unsqueeze(-2), w.abs(), v.mT()};
}

}  // namespace

Tensor pinv(const Tensor& a, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  check_matrix(a, "linalg.pinv", hermitian);
  Spectrum sp = spectrum(a, hermitian);
  Tensor kept = sp.values > threshold(sp.values, a.size(-2), a.size(-1), atol, rtol);
  Tensor inverse = where(kept, 1 / where(kept, sp.values, 1.0), 0.0);
  return matmul(sp.right.mT(), inverse.unsqueeze(-1) * sp.left.mT());
}

Tensor matrix_rank(const Tensor& a, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  check_matrix(a, "linalg.matrix_rank", hermitian);
  NoGradGuard no_grad;
  Tensor s = hermitian ? eigh_op(a).first.abs() : std::get<1>(svd_op(a, false));
  return (s > threshold(s, a.size(-2), a.size(-1), atol, rtol)).sum(Dims{-1});
}

LstsqResult lstsq(const Tensor& a, const Tensor& b0) {
  check_matrix(a, "linalg.lstsq", false);
  check_pair(a, b0, "linalg.lstsq");
  const bool vector = b0.dim() == a.dim() - 1;
  Tensor b = vector ? b0.unsqueeze(-1) : b0;
  if (b.dim() < 2 || b.size(-2) != a.size(-2))
    fail("[linalg.lstsq] incompatible shapes of A and B: ", a.shape(), " and ", b0.shape(), " (dtype ", a.dtype(), ")");
  const int64_t m = a.size(-2), n = a.size(-1);
  Shape batch = broadcast_batch(a, b, "linalg.lstsq");
  Tensor ab = a.expand(with(batch, {m, n})), bb = b.expand(with(batch, {m, b.size(-1)}));
  // QR needs full rank: a rank-deficient A leaves R with a zero on its diagonal. Eagerly that
  // raises; vmap cannot branch on values, so there the SVD-based minimum-norm solution (right at
  // any rank) is taken instead.
  const bool batched = batching::max_level({&ab, &bb}) > 0;
  Tensor x;
  if (batched) {
    x = matmul(pinv(ab), bb);
  } else if (m >= n) {  // A = Q R: X = R^-1 Q^T B
    auto [q, r] = qr_op(ab, "reduced");
    x = solve_triangular_op(r, matmul(q.mT(), bb), true, false);
  } else {  // A^T = Q R: the minimum-norm X = Q R^-T B
    auto [q, r] = qr_op(ab.mT(), "reduced");
    x = matmul(q, solve_triangular_op(r.mT(), bb, false, false));
  }
  Tensor rank = matrix_rank(ab);
  const int64_t k = std::min(m, n);
  if (ValueReadScope check; !batched && rank.numel() > 0 && (rank < k).sum().item<int64_t>() > 0)
    fail<RuntimeError>("[linalg.lstsq] A is rank-deficient (rank ", rank.amin().item<int64_t>(), " < min(m, n) = ", k,
                       "; shape ", a.shape(), ", dtype ", a.dtype(),
                       "): the QR-based solution needs full rank; linalg.pinv(A) @ B gives the minimum-norm one");
  return {vector ? x.squeeze(Dims{-1}) : x, empty({0}, like(a)), rank, empty({0}, like(a))};
}

Tensor matrix_power(const Tensor& a, int64_t n) {
  check_matrix(a, "linalg.matrix_power");
  if (n == 0) return eye(a.size(-1), {}, like(a)).expand(a.shape()).clone();
  Tensor base = n < 0 ? inv(a) : a;
  Tensor result;
  for (uint64_t e = static_cast<uint64_t>(n < 0 ? -n : n);; e >>= 1) {
    if (e & 1) result = result.defined() ? matmul(result, base) : base;
    if (e <= 1) break;
    base = matmul(base, base);
  }
  return result;
}

Tensor vector_norm(const Tensor& x, double ord, const std::optional<Dims>& dims, bool keepdim) {
  return ug::norm(x, ord, dims, keepdim);
}

namespace {

/** The two dims of a matrix norm, checked and wrapped, and the reduction over them. */
std::pair<int64_t, int64_t> matrix_dims(const Tensor& a, const Dims& dims, const char* op) {
  if (a.dim() < 2) fail("[", op, "] expected a tensor of at least 2 dims, got shape ", a.shape());
  if (dims.size() != 2) fail("[", op, "] expected 2 dims, got ", dims.size());
  int64_t d0 = wrap_dim(dims[0], a.dim(), op), d1 = wrap_dim(dims[1], a.dim(), op);
  if (d0 == d1) fail("[", op, "] dims must be different, got ", dims[0], " and ", dims[1]);
  return {d0, d1};
}

/** The matrix norm computed on a with its two dims moved last, then put back if keepdim. */
Tensor over_matrices(const Tensor& a, std::pair<int64_t, int64_t> d, bool keepdim,
                     const std::function<Tensor(const Tensor&)>& f) {
  Tensor r = f(a.movedim(d.first, -1).movedim(d.second > d.first ? d.second - 1 : d.second, -1));
  if (!keepdim) return r;
  const int64_t lo = std::min(d.first, d.second), hi = std::max(d.first, d.second);
  return r.unsqueeze(lo).unsqueeze(hi);
}

}  // namespace

Tensor matrix_norm(const Tensor& a, std::string_view ord, const Dims& dims, bool keepdim) {
  auto d = matrix_dims(a, dims, "linalg.matrix_norm");
  if (ord == "fro") return ug::norm(a, 2, Dims{d.first, d.second}, keepdim);
  if (ord != "nuc") fail("[linalg.matrix_norm] ord must be 'fro', 'nuc' or a number, got '", ord, "'");
  check_matrix(a, "linalg.matrix_norm", false);
  return over_matrices(a, d, keepdim, [](const Tensor& m) { return svdvals(m).sum(Dims{-1}); });
}

Tensor matrix_norm(const Tensor& a, double ord, const Dims& dims, bool keepdim) {
  auto d = matrix_dims(a, dims, "linalg.matrix_norm");
  check_matrix(a, "linalg.matrix_norm", false);
  constexpr double inf = std::numeric_limits<double>::infinity();
  const bool largest = ord > 0;
  if (std::abs(ord) == 2)
    return over_matrices(a, d, keepdim, [largest](const Tensor& m) {
      Tensor s = svdvals(m);
      return largest ? s.amax(Dims{-1}) : s.amin(Dims{-1});
    });
  if (std::abs(ord) != 1 && std::abs(ord) != inf)
    fail("[linalg.matrix_norm] ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got ", ord);
  // 1: the largest column sum of |a| (sums over rows); inf: the largest row sum.
  return over_matrices(a, d, keepdim, [largest, ord](const Tensor& m) {
    Tensor sums = m.abs().sum(Dims{std::abs(ord) == 1 ? -2 : -1});
    return largest ? sums.amax(Dims{-1}) : sums.amin(Dims{-1});
  });
}

Tensor norm(const Tensor& x, std::optional<double> ord, const std::optional<Dims>& dims, bool keepdim) {
  if (dims.has_value() && dims->size() == 2)
    return ord ? matrix_norm(x, *ord, *dims, keepdim) : matrix_norm(x, "fro", *dims, keepdim);
  if (dims.has_value() && dims->size() != 1) fail("[linalg.norm] dim must hold 1 or 2 dims, got ", dims->size());
  if (!ord || dims.has_value()) return ug::norm(x, ord.value_or(2), dims, keepdim);
  if (x.dim() == 1) return ug::norm(x, *ord, std::nullopt, keepdim);
  if (x.dim() == 2) return matrix_norm(x, *ord, Dims{0, 1}, keepdim);
  fail("[linalg.norm] with ord and no dim the input must be 1-D or 2-D, got shape ", x.shape());
}

Tensor norm(const Tensor& x, std::string_view ord, const std::optional<Dims>& dims, bool keepdim) {
  if (dims.has_value() && dims->size() == 2) return matrix_norm(x, ord, *dims, keepdim);
  if (!dims.has_value() && x.dim() == 2) return matrix_norm(x, ord, Dims{0, 1}, keepdim);
  fail("[linalg.norm] ord '", ord, "' is a matrix norm: it needs a 2-D input or two dims, got shape ", x.shape());
}

}  // namespace linalg

}  // namespace ug
