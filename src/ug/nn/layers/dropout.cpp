#include "ug/nn/layers/dropout.h"

#include "ug/core/python_repr.h"
#include "ug/nn/functional/dropout.h"
#include "ug/nn/functional/embedding.h"
#include "ug/nn/layers/embedding_table.h"

namespace ug::nn {

DropoutImpl::DropoutImpl(double p, bool inplace) : DropoutImpl("Dropout", functional::dropout, p, inplace) {}

DropoutImpl::DropoutImpl(std::string type_name, Drop drop, double p, bool inplace)
    : Module(std::move(type_name)), drop_(drop), p_(p), inplace_(inplace) {
  if (p < 0 || p > 1) fail("[", this->type_name(), "] p must be in [0, 1], got ", p);
}

Dropout1dImpl::Dropout1dImpl(double p, bool inplace) : DropoutImpl("Dropout1d", functional::dropout1d, p, inplace) {}

Dropout2dImpl::Dropout2dImpl(double p, bool inplace) : DropoutImpl("Dropout2d", functional::dropout2d, p, inplace) {}

Dropout3dImpl::Dropout3dImpl(double p, bool inplace) : DropoutImpl("Dropout3d", functional::dropout3d, p, inplace) {}

Tensor DropoutImpl::forward(const Tensor& x) { return drop_(x, p_, is_training(), inplace_); }

std::string DropoutImpl::extra_repr() const {
  return "p=" + python_repr(p_) + ", inplace=" + (inplace_ ? "True" : "False");
}

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx)
    : Module("Embedding"),
      num_embeddings_(num_embeddings),
      embedding_dim_(embedding_dim),
      padding_idx_(detail::checked_table(num_embeddings, embedding_dim, padding_idx, "Embedding")) {
  register_parameter("weight", empty({num_embeddings, embedding_dim}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() { detail::reset_table(parameter("weight"), padding_idx_); }

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, parameter("weight"), padding_idx_);
}

std::string EmbeddingImpl::extra_repr() const {
  return std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_) +
         (padding_idx_ ? ", padding_idx=" + std::to_string(*padding_idx_) : "");
}

}  // namespace ug::nn
