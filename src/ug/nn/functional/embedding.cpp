// one_hot; embedding itself is an op (ops/nn.h).
#include "ug/nn/functional/embedding.h"

#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/reduce.h"

namespace ug::nn::functional {

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  if (indices.dtype() != DType::Int64 && indices.dtype() != DType::Int32)
    fail<TypeError>("[one_hot] expected class indices of dtype int64 or int32, got ", indices.dtype(), " (shape ",
                    indices.shape(), ")");
  Tensor idx = indices.to(DType::Int64);
  Dims shape(idx.shape().begin(), idx.shape().end());
  if (idx.numel() == 0) {
    if (num_classes < 0) fail("[one_hot] Can not infer total number of classes from empty tensor.");
    shape.push_back(num_classes);
    return zeros(shape, {.dtype = DType::Int64, .device = idx.device()});
  }
  if (idx.min().item<int64_t>() < 0) fail("[one_hot] Class values must be non-negative.");
  const int64_t top = idx.max().item<int64_t>();
  if (num_classes < 0) num_classes = top + 1;
  else if (top >= num_classes)
    fail("[one_hot] Class values must be smaller than num_classes (", num_classes, "), got ", top);
  shape.push_back(num_classes);
  return scatter(zeros(shape, {.dtype = DType::Int64, .device = idx.device()}), -1, idx.unsqueeze(-1),
                 Scalar(int64_t{1}));
}

}  // namespace ug::nn::functional
