#include "ug/nn/layers/embedding_table.h"

#include "ug/graph/grad_mode.h"
#include "ug/nn/init.h"

namespace ug::nn::detail {

std::optional<int64_t> checked_table(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx,
                                     const char* layer) {
  if (num_embeddings <= 0 || embedding_dim <= 0)
    fail("[", layer, "] sizes must be positive, got ", num_embeddings, " and ", embedding_dim);
  if (!padding_idx) return std::nullopt;
  if (*padding_idx < -num_embeddings || *padding_idx >= num_embeddings)
    fail("[", layer, "] padding_idx ", *padding_idx, " is out of range for ", num_embeddings, " embeddings");
  return *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
}

void check_pretrained(const Tensor& embeddings, const char* layer) {
  if (!embeddings.defined() || embeddings.dim() != 2)
    fail("[", layer, ".from_pretrained] Embeddings parameter is expected to be 2-dimensional, got shape ",
         embeddings.defined() ? embeddings.shape() : Shape{});
}

void reset_table(Tensor& weight, std::optional<int64_t> padding_idx) {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}

}  // namespace ug::nn::detail
