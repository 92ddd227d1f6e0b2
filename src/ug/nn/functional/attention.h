// torch.nn.functional.scaled_dot_product_attention.
#pragma once

#include <optional>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** softmax(q @ k^T * scale + mask) @ v for q [..., L, E], k [..., S, E], v [..., S, Ev]; the
 *  leading dims broadcast. attn_mask (optional, broadcast to [..., L, S]) is bool (true =
 *  attend) or a float added to the scores; is_causal masks the upper triangle (a query
 *  attends to keys at or before its position). scale defaults to 1 / sqrt(E). Dropout on
 *  the attention weights draws from the global generator. Rows whose every key is masked
 *  give zeros, as torch's CPU kernels do. enable_gqa lets k and v have fewer heads (dim -3)
 *  than q, each shared by a group of query heads. */
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = {}, bool enable_gqa = false);

}  // namespace ug::nn::functional
