// The op table's Det: Gaussian elimination with partial pivoting over the batch of [..., n, n]
// matrices, composed of ug ops so that the determinant is differentiable.
#include "ug/onnx/import_util.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/unary.h"

namespace ug::onnx {

namespace {

Outputs det_op(const OpContext& c) {
  Tensor a = c.input(0);
  if (a.dim() < 2 || a.size(-1) != a.size(-2)) c.fail("the input must be [..., n, n], got ", a.shape());
  if (!is_floating(a.dtype())) c.fail<TypeError>("the input must be floating-point, got ", a.dtype());
  const int64_t n = a.size(-1);
  Dims batch(a.shape().begin(), a.shape().end() - 2);
  Tensor det = ones(batch, {.dtype = a.dtype()});
  const Tensor rows = arange(n, {.dtype = DType::Int64});
  for (int64_t j = 0; j < n; ++j) {
    // The largest entry of column j at or below the diagonal becomes the pivot: rows j and p swap.
    const Tensor p = add(a.narrow(-2, j, n - j).select(-1, j).abs().argmax(-1, true), j);  // [..., 1]
    const Tensor perm = where(eq(rows, j), p, where(eq(rows, p), j, rows));                // [..., n]
    Dims full = a.shape();
    a = a.gather(-2, perm.unsqueeze(-1).expand(full).contiguous());
    const Tensor swapped = ne(p.squeeze(Dims{static_cast<int64_t>(batch.size())}), j);
    const Tensor pivot = a.select(-2, j).select(-1, j);
    det = mul(det, where(swapped, neg(pivot), pivot));
    if (j + 1 == n) break;
    // A zero pivot means a zero column below it: the determinant is 0 whatever the factors.
    const Tensor safe = where(eq(pivot, 0), ones_like(pivot), pivot).unsqueeze(-1).unsqueeze(-1);
    const Tensor below = a.narrow(-2, j + 1, n - j - 1);
    const Tensor factors = div(below.narrow(-1, j, 1), safe);
    a = concat({a.narrow(-2, 0, j + 1), sub(below, mul(factors, a.narrow(-2, j, 1)))}, -2);
  }
  return one(det);
}

}  // namespace

void add_linalg_ops(std::vector<OpSpec>& ops) { ops.push_back({"Det", det_op, 1, 1, 1, 1, {}}); }

}  // namespace ug::onnx
