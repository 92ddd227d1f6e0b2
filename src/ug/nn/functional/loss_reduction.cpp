#include "ug/nn/functional/loss_reduction.h"

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"

namespace ug::nn::functional::detail {

using ops::Reduction;

Reduction parse_reduction(std::string_view r, const char* op, bool batchmean) {
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (r == "none") return Reduction::None;
  if (batchmean && r == "batchmean") return Reduction::BatchMean;
  fail("[", op, "] '", r, "' is not a valid value for reduction: use 'mean', 'sum' or 'none'",
       batchmean ? " (or 'batchmean')" : "");
}

Tensor reduce(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Sum: return loss.sum();
    case Reduction::Mean: return loss.mean();
    case Reduction::BatchMean: return loss.dim() == 0 ? loss.sum() : loss.sum() / static_cast<double>(loss.size(0));
  }
  return loss;
}

void require_floating(const Tensor& x, const char* op, const char* what) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("[", op, "] expected a floating point ", what, ", got dtype ", x.dtype(), " (shape ", x.shape(),
                    ")");
}

Reduction checked_reduction(std::string_view r, const char* op, const Tensor& x, const char* what) {
  Reduction reduction = parse_reduction(r, op);
  require_floating(x, op, what);
  return reduction;
}

}  // namespace ug::nn::functional::detail
