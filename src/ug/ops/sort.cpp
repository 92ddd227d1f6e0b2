// Sorting: the sorted dim is moved last and made contiguous, the backend sorts each row of
// that [rows, n] block, and the results are moved back. topk takes the head of a sort.
#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/reduce.h"

namespace ug {

namespace {
/** Whether the sorted values need a derivative rule (reverse or forward mode). */
bool derivative_wanted(const Tensor& x) { return autograd::needs_grad({&x}) || forward::active(); }

const graph::OpDef kSort("sort");

/** sort() itself; the public sort's call records it as one op. */
std::pair<Tensor, Tensor> sort_untraced(const Tensor& x, int64_t dim, bool descending, bool stable) {
  int64_t d = wrap_dim(dim, x.dim(), "sort");
  if (x.dim() == 0) return {x.clone(), zeros({}, {.dtype = DType::Int64, .device = x.device()})};
  if (int lvl = batching::level(x)) {  // each example sorts on its own: sort along d + 1
    // The op, not its kernel: a trace holds the physical sort, whose results a program computes.
    auto [v, i] = ug::sort(batching::physical(x, lvl), d + 1, descending, stable);
    Tensor values = batching::wrap(v, lvl), indices = batching::wrap(i, lvl);
    // Reading the values back through the indices gives them their gradient.
    return {derivative_wanted(x) ? x.gather(d, indices) : values, indices};
  }
  Tensor rows = x.transpose(d, -1).contiguous();
  Tensor values = empty(rows.shape(), {.dtype = x.dtype(), .device = x.device()});
  Tensor indices = empty(rows.shape(), {.dtype = DType::Int64, .device = x.device()});
  const int64_t n = x.size(d);
  if (x.numel() > 0) backend_for(x.device()).sort(rows, x.numel() / n, n, descending, stable, values, indices);
  Tensor idx = indices.transpose(d, -1);
  // With gradients on, the values are read back through the indices: gather records the
  // rule (the gradient goes back to where each value came from).
  return {derivative_wanted(x) ? x.gather(d, idx) : values.transpose(d, -1), idx};
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  graph::OpCall call(kSort);
  auto result = sort_untraced(x, dim, descending, stable);
  if (call.capturing())
    call.set_attrs(
        {{"dim", wrap_dim(dim, x.dim(), "sort")}, {"descending", int64_t{descending}}, {"stable", int64_t{stable}}});
  // The values' derivative is recorded by the gather that reads them.
  call.finish({&x}, {&result.first, &result.second});
  return result;
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return sort(x, dim, descending, stable).second;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // the head of a full sort is always in order
  int64_t d = wrap_dim(dim, x.dim(), "topk");
  int64_t n = x.dim() > 0 ? x.size(d) : 1;
  if (k < 0 || k > n)
    fail<RuntimeError>("[topk] selected index k = ", k, " out of range for dimension ", d, " of size ", n,
                       " (input shape ", x.shape(), ", dtype ", x.dtype(), ")");
  auto [values, indices] = sort(x, d, largest, /*stable=*/true);
  if (x.dim() == 0) return {values, indices};
  return {values.narrow(d, 0, k), indices.narrow(d, 0, k)};
}

std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return ug::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return ug::argsort(*this, dim, descending, stable);
}
std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return ug::topk(*this, k, dim, largest, sorted);
}

}  // namespace ug
