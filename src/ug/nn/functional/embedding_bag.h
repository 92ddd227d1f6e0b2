// embedding_bag: the rows of a weight matrix picked by indices, reduced bag by bag.
#pragma once

#include <optional>
#include <string_view>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** torch.nn.functional.embedding_bag: input [B, L] (B bags of L indices) or input [n] cut into
 *  bags at `offsets` (their starts; with include_last_offset one more, the end, as in CSR);
 *  each bag's rows of weight [num_embeddings, dim] reduced by `mode` ("sum", "mean" or "max")
 *  into out [B, dim]. per_sample_weights (sum only, input's shape) scale the rows; padding_idx's
 *  rows are left out of their bags; an empty bag gives zeros. max_norm, norm_type and
 *  scale_grad_by_freq are embedding's. */
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& offsets = {},
                     std::optional<double> max_norm = {}, double norm_type = 2.0, bool scale_grad_by_freq = false,
                     std::string_view mode = "mean", const std::optional<Tensor>& per_sample_weights = {},
                     bool include_last_offset = false, std::optional<int64_t> padding_idx = {});

}  // namespace ug::nn::functional
