// torch.linalg.matrix_exp as one op. How many squarings it takes depends on the input's norm,
// so a compiled program calls the op back rather than replay the squarings its trace took.
// Its derivatives are the Frechet derivative L(A, E), read off the exponential of a block
// matrix: exp([[A, E], [0, A]]) = [[exp A, L(A, E)], [0, exp A]] (Najfeld and Havel, 1995).
// The jvp is L(A, T) and the vjp L(A^T, G), both made with this op, so derivatives of any
// order work; the vmap rule is the op on the physical tensor, whose vmap dim is a batch dim.
#include <cmath>

#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/reduce.h"

namespace ug::linalg {

namespace {

const graph::OpDef kMatrixExp("linalg_matrix_exp");

/** exp(A) from A's values: A scaled so that its largest absolute row sum is at most 1/2, where
 *  18 Taylor terms are exact to float64's precision, then squared back. */
Tensor scale_and_square(const Tensor& a) {
  const double norm = a.abs().sum({-1}).amax().to(DType::Float64).item<double>();
  const int squarings = norm > 0.5 ? static_cast<int>(std::ceil(std::log2(norm / 0.5))) : 0;
  const Tensor x = a / std::ldexp(1.0, squarings);
  const Tensor id = eye(a.size(-1), a.size(-1), {.dtype = a.dtype(), .device = a.device()});
  Tensor e = id;
  for (int k = 18; k >= 1; --k) e = id + x.matmul(e) / static_cast<double>(k);
  for (int i = 0; i < squarings; ++i) e = e.matmul(e);
  return e;
}

Tensor matrix_exp_op(const Tensor& a);

/** L(A, E): the top-right block of exp([[A, E], [0, A]]). */
Tensor frechet(const Tensor& a, const Tensor& e) {
  const int64_t n = a.size(-1);
  const Tensor block = cat({cat({a, e}, -1), cat({zeros_like(a), a}, -1)}, -2);
  return matrix_exp_op(block).narrow(-2, 0, n).narrow(-1, n, n);
}

Tensor matrix_exp_op(const Tensor& a) {
  graph::OpCall call(kMatrixExp);
  Tensor out;
  if (int lvl = batching::level(a)) {
    out = batching::wrap(matrix_exp_op(batching::physical(a, lvl)), lvl);
  } else if (a.numel() == 0) {
    out = empty(a.shape(), {.dtype = a.dtype(), .device = a.device()});
  } else {
    NoGradGuard no_grad;
    out = scale_and_square(a.detach());
  }
  if (call.capturing())
    call.set_replay([](const graph::Tensors& in) { return graph::Tensors{matrix_exp_op(in[0])}; },
                    graph::ReplaySizes::None);
  call.finish(
      {&a}, {&out}, {graph::input(a)},
      [](graph::Saved s, graph::Tensors&& g) { return graph::Tensors{frechet(s[0].mT(), g[0])}; },
      [&](const graph::Tensors& t) { return graph::Tensors{frechet(a, t[0])}; });
  return out;
}

}  // namespace

Tensor matrix_exp(const Tensor& a) {
  if (a.dtype() != DType::Float32 && a.dtype() != DType::Float64)
    fail<TypeError>("[linalg.matrix_exp] expected a float32 or float64 tensor, got ", a.dtype(), " (shape ", a.shape(),
                    ")");
  if (a.dim() < 2 || a.size(-1) != a.size(-2))
    fail("[linalg.matrix_exp] expected square matrices [..., n, n], got shape ", a.shape(), " (dtype ", a.dtype(), ")");
  return matrix_exp_op(a);
}

}  // namespace ug::linalg
