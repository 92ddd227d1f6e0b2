// The lookup table Embedding and EmbeddingBag share: its checks and torch's initialisation.
#pragma once

#include <optional>

#include "ug/core/tensor.h"

namespace ug::nn::detail {

/** padding_idx counted from the table's start (torch's negatives count from its end), after
 *  checking the sizes and that it lies in the table; `layer` names the layer in errors. */
std::optional<int64_t> checked_table(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx,
                                     const char* layer);
/** Checks from_pretrained's table: 2-D [num_embeddings, embedding_dim]. */
void check_pretrained(const Tensor& embeddings, const char* layer);
/** weight drawn from N(0, 1), with the padding_idx row zero. */
void reset_table(Tensor& weight, std::optional<int64_t> padding_idx);

}  // namespace ug::nn::detail
