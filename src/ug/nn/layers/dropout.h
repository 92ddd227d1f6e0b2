// Dropout (inactive in eval) and Embedding (a lookup table of trainable rows).
#pragma once

#include <optional>
#include <string>

#include "ug/nn/module.h"

namespace ug::nn {

class DropoutImpl : public Module {
  UG_CLONEABLE(DropoutImpl)
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p() const { return p_; }

 private:
  double p_;
};
UG_MODULE(Dropout);

/** weight [num_embeddings, embedding_dim] drawn from N(0, 1); the padding_idx row starts at
 *  zero and gets no gradient. */
class EmbeddingImpl : public Module {
  UG_CLONEABLE(EmbeddingImpl)
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = {});
  Tensor forward(const Tensor& indices) override;
  void reset_parameters() override;
  std::string extra_repr() const override;

 private:
  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;
};
UG_MODULE(Embedding);

}  // namespace ug::nn
