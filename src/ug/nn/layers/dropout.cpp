#include "ug/nn/layers/dropout.h"

#include "ug/core/python_repr.h"
#include "ug/nn/functional/dropout.h"
#include "ug/nn/functional/embedding.h"
#include "ug/nn/layers/embedding_table.h"

namespace ug::nn {

DropoutImpl::DropoutImpl(double p, bool inplace) : DropoutImpl("Dropout", functional::dropout, p, inplace) {}

DropoutImpl::DropoutImpl(std::string type_name, Drop drop, double p, bool inplace)
    : Module(std::move(type_name)), drop_(drop), inplace_(inplace) {
  set_p(p);
}

void DropoutImpl::set_p(double p) {
  if (!(p >= 0 && p <= 1)) fail("[", type_name(), "] p must be in [0, 1], got ", p);
  p_ = p;
}

Dropout1dImpl::Dropout1dImpl(double p, bool inplace) : DropoutImpl("Dropout1d", functional::dropout1d, p, inplace) {}

Dropout2dImpl::Dropout2dImpl(double p, bool inplace) : DropoutImpl("Dropout2d", functional::dropout2d, p, inplace) {}

Dropout3dImpl::Dropout3dImpl(double p, bool inplace) : DropoutImpl("Dropout3d", functional::dropout3d, p, inplace) {}

Tensor DropoutImpl::forward(const Tensor& x) { return drop_(x, p_, is_training(), inplace_); }

std::string DropoutImpl::extra_repr() const {
  return "p=" + python_repr(p_) + ", inplace=" + (inplace_ ? "True" : "False");
}

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx,
                             std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq)
    : Module("Embedding"),
      num_embeddings_(num_embeddings),
      embedding_dim_(embedding_dim),
      padding_idx_(detail::checked_table(num_embeddings, embedding_dim, padding_idx, "Embedding")),
      max_norm_(max_norm),
      norm_type_(norm_type),
      scale_grad_by_freq_(scale_grad_by_freq) {
  register_parameter("weight", empty({num_embeddings, embedding_dim}));
  reset_parameters();
}

std::shared_ptr<EmbeddingImpl> EmbeddingImpl::from_pretrained(const Tensor& embeddings, bool freeze,
                                                              std::optional<int64_t> padding_idx,
                                                              std::optional<double> max_norm, double norm_type,
                                                              bool scale_grad_by_freq) {
  detail::check_pretrained(embeddings, "Embedding");
  auto m = std::make_shared<EmbeddingImpl>(embeddings.size(0), embeddings.size(1), padding_idx, max_norm, norm_type,
                                           scale_grad_by_freq);
  m->register_parameter("weight", embeddings.detach(), !freeze);
  return m;
}

void EmbeddingImpl::reset_parameters() { detail::reset_table(parameter("weight"), padding_idx_); }

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, parameter("weight"), padding_idx_, max_norm_, norm_type_, scale_grad_by_freq_);
}

std::string EmbeddingImpl::extra_repr() const {
  // torch's order; only what differs from the defaults
  std::string s = std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_);
  if (padding_idx_) s += ", padding_idx=" + std::to_string(*padding_idx_);
  if (max_norm_) s += ", max_norm=" + python_repr(*max_norm_);
  if (norm_type_ != 2.0) s += ", norm_type=" + python_repr(norm_type_);
  if (scale_grad_by_freq_) s += ", scale_grad_by_freq=True";
  return s;
}

}  // namespace ug::nn
