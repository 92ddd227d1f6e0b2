// EmbeddingBag: a lookup table whose rows are reduced bag by bag (functional/embedding_bag.h).
#pragma once

#include <optional>
#include <string>

#include "ug/nn/module.h"

namespace ug::nn {

/** weight [num_embeddings, embedding_dim] drawn from N(0, 1), the padding_idx row zero;
 *  forward(input, offsets, per_sample_weights) as functional::embedding_bag. */
class EmbeddingBagImpl : public Module {
  UG_CLONEABLE(EmbeddingBagImpl)
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim, std::optional<double> max_norm = {},
                   double norm_type = 2.0, bool scale_grad_by_freq = false, std::string mode = "mean",
                   bool include_last_offset = false, std::optional<int64_t> padding_idx = {});
  /** torch.nn.EmbeddingBag.from_pretrained: the table is `embeddings` [num_embeddings,
   *  embedding_dim] (its storage shared, its padding_idx row kept), trained unless freeze. */
  static std::shared_ptr<EmbeddingBagImpl> from_pretrained(const Tensor& embeddings, bool freeze = true,
                                                           std::optional<double> max_norm = {}, double norm_type = 2.0,
                                                           bool scale_grad_by_freq = false, std::string mode = "mean",
                                                           bool include_last_offset = false,
                                                           std::optional<int64_t> padding_idx = {});
  Tensor forward(const Tensor& input) override { return forward(input, std::nullopt, std::nullopt); }
  Tensor forward(const Tensor& input, const std::optional<Tensor>& offsets,
                 const std::optional<Tensor>& per_sample_weights = {});
  void reset_parameters() override;
  std::string extra_repr() const override;

 private:
  int64_t num_embeddings_, embedding_dim_;
  std::optional<double> max_norm_;
  double norm_type_;
  bool scale_grad_by_freq_;
  std::string mode_;
  bool include_last_offset_;
  std::optional<int64_t> padding_idx_;
};
UG_MODULE(EmbeddingBag);

}  // namespace ug::nn
