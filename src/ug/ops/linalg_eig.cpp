// torch.linalg.eig and eigvals: the eigendecomposition A = V diag(L) V^-1 of a general square
// matrix, real or complex, through LAPACK's geev. L and V are complex whatever A is. One op,
// linalg_eig, with torch's derivative rules (FunctionsManual.cpp, linalg_eig_backward and
// linalg_eig_jvp), written with ops that have their own rules so that they differentiate
// again. Eigenvectors are defined up to a phase each: the rules hold for losses that do not
// depend on it (as torch's; a loss that does gets an arbitrary answer in both libraries).
#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/linalg.h"
#include "ug/ops/linalg_common.h"

namespace ug {

using namespace linalg_detail;

namespace {

const graph::OpDef kEig("linalg_eig");

/** The gradient of A from those of L and V (either undefined): V^-H (diag(gL) + P / conj(E)) V^H,
 *  where P is V^H gV less its component along each eigenvector's norm (the rule for the
 *  columns' unit norm), with P's diagonal (the phase's direction) dropped. */
Tensor eig_vjp(const Tensor& L, const Tensor& V, const Tensor& gL, const Tensor& gV) {
  Tensor inner;
  if (gV.defined()) {
    Tensor vg = matmul(mH(V), gV);
    vg = vg - matmul(mH(V), V * real(vg.diagonal(0, -2, -1)).unsqueeze(-2));
    inner = off_diagonal(vg / conj(gaps(L)));
  }
  if (gL.defined()) inner = inner.defined() ? inner + diag_embed(gL) : diag_embed(gL);
  return linalg::solve(mH(V), matmul(inner, mH(V)));
}

std::pair<Tensor, Tensor> eig_op(const Tensor& a) {
  graph::OpCall call(kEig);
  Tensor L, V;
  if (int lvl = batching::level(a)) {
    auto [pl, pv] = eig_op(batching::physical(a, lvl));
    L = batching::wrap(pl, lvl);
    V = batching::wrap(pv, lvl);
  } else {
    const int64_t n = a.size(-1);
    const Options out{.dtype = is_complex(a.dtype()) ? a.dtype() : to_complex(a.dtype()), .device = a.device()};
    L = empty(with(batch_of(a), {n}), out);
    V = empty(a.shape(), out);
    if (V.numel() > 0) {
      ops::LinalgStatus s = backend_for(a.device()).eig(a.reshape({-1, n, n}), L.view({-1, n}), V.view({-1, n, n}));
      if (s.failed())
        fail<linalg::LinAlgError>("[linalg.eig] ", batch_element(a, s),
                                  "the QR algorithm failed to compute all the eigenvalues (", s.info,
                                  " did not converge), shape ", a.shape(), ", dtype ", a.dtype());
    }
  }
  if (call.capturing())
    call.set_replay(
        [](const graph::Tensors& in) {
          auto [L, V] = eig_op(in[0]);
          return graph::Tensors{L, V};
        },
        graph::ReplaySizes::None);
  const DType in_dtype = a.dtype();
  call.finish(
      {&a}, {&L, &V}, {graph::output(L), graph::output(V)},
      [in_dtype](graph::Saved s, graph::Tensors&& g) {
        return graph::Tensors{real_part_if(eig_vjp(s[0], s[1], g[0], g[1]), in_dtype)};
      },
      [&](const graph::Tensors& t) {
        // dP = V^-1 dA V: dL = diag(dP), dV = V (dP / E off the diagonal), less each column's
        // component that would change its norm.
        Tensor dp = linalg::solve(V, matmul(t[0].to(V.dtype()), V));
        Tensor dv = matmul(V, off_diagonal(dp / gaps(L)));
        dv = dv - V * real(matmul(mH(V), dv).diagonal(0, -2, -1)).unsqueeze(-2);
        return graph::Tensors{dp.diagonal(0, -2, -1), dv};
      });
  return {L, V};
}

}  // namespace

namespace linalg {

EigResult eig(const Tensor& a) {
  check_matrix(a, "linalg.eig", true, /*complex_ok=*/true);
  auto [L, V] = eig_op(a);
  return {L, V};
}

Tensor eigvals(const Tensor& a) {
  check_matrix(a, "linalg.eigvals", true, /*complex_ok=*/true);
  return eig_op(a).first;
}

}  // namespace linalg

}  // namespace ug
