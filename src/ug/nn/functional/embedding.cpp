// one_hot; embedding itself is an op (ops/nn.h).
#include "ug/nn/functional/embedding.h"

#include <utility>

#include "ug/core/value_read.h"
#include "ug/graph/capture.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/reduce.h"
#include "ug/ops/value_checks.h"

namespace ug::nn::functional {

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  if (indices.dtype() != DType::Int64 && indices.dtype() != DType::Int32)
    fail<TypeError>("[one_hot] expected class indices of dtype int64 or int32, got ", indices.dtype(), " (shape ",
                    indices.shape(), ")");
  // As jax.nn.one_hot, which takes num_classes always: the largest index is a value of each run.
  if (num_classes < 0 && graph::detail::current_capture)
    fail(
        "[one_hot] without num_classes, the number of classes is the largest index + 1, which depends on the "
        "data; a compiled program's shapes cannot: pass num_classes");
  Tensor idx = indices.to(DType::Int64);
  Dims shape(idx.shape().begin(), idx.shape().end());
  if (idx.numel() == 0) {
    if (num_classes < 0) fail("[one_hot] Can not infer total number of classes from empty tensor.");
    shape.push_back(num_classes);
    return zeros(shape, {.dtype = DType::Int64, .device = idx.device()});
  }
  // Given num_classes, the classes of every example are checked at once (vmap). Without it,
  // each example's largest class sets its shape: vmap calls the function once per example.
  std::pair<int64_t, int64_t> range;
  if (num_classes < 0) {
    ValueReadScope read;  // refused above under a trace
    range = {idx.min().item<int64_t>(), idx.max().item<int64_t>()};
  } else {
    range = ops::integer_range(idx);
  }
  const auto [lo, top] = range;
  if (lo < 0) fail("[one_hot] Class values must be non-negative.");
  if (num_classes < 0) num_classes = top + 1;
  else if (top >= num_classes)
    fail("[one_hot] Class values must be smaller than num_classes (", num_classes, "), got ", top);
  shape.push_back(num_classes);
  return scatter(zeros(shape, {.dtype = DType::Int64, .device = idx.device()}), -1, idx.unsqueeze(-1),
                 Scalar(int64_t{1}));
}

}  // namespace ug::nn::functional
