// Lookups by integer index: embedding (rows of a weight matrix) and one_hot.
#pragma once

#include <optional>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** weight[indices]: indices (int64 or int32, any shape) pick rows of weight [num, dim], giving
 *  indices.shape + [dim]. The row at padding_idx gets no gradient. With max_norm, the rows
 *  looked up are first renormalized in place to a norm_type-norm of at most max_norm (as
 *  torch does); scale_grad_by_freq divides each row's gradient by its count in indices. */
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = {},
                 std::optional<double> max_norm = {}, double norm_type = 2.0, bool scale_grad_by_freq = false);

/** int64 [..., num_classes] with a 1 at each index; num_classes = -1 means max(indices) + 1. */
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

}  // namespace ug::nn::functional
