// Lookups by integer index: embedding (rows of a weight matrix, an op) and one_hot.
#pragma once

#include <optional>

#include "ug/core/tensor.h"
#include "ug/ops/nn.h"

namespace ug::nn::functional {

using ug::embedding;  // an op: ops/nn.h

/** int64 [..., num_classes] with a 1 at each index; num_classes = -1 means max(indices) + 1. */
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

}  // namespace ug::nn::functional
