#include "ug/nn/layers/embedding_bag.h"

#include <sstream>

#include "ug/core/python_repr.h"
#include "ug/nn/functional/embedding_bag.h"
#include "ug/nn/layers/embedding_table.h"

namespace ug::nn {

EmbeddingBagImpl::EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim, std::optional<double> max_norm,
                                   double norm_type, bool scale_grad_by_freq, std::string mode,
                                   bool include_last_offset, std::optional<int64_t> padding_idx)
    : Module("EmbeddingBag"),
      num_embeddings_(num_embeddings),
      embedding_dim_(embedding_dim),
      max_norm_(max_norm),
      norm_type_(norm_type),
      scale_grad_by_freq_(scale_grad_by_freq),
      mode_(std::move(mode)),
      include_last_offset_(include_last_offset),
      padding_idx_(detail::checked_table(num_embeddings, embedding_dim, padding_idx, "EmbeddingBag")) {
  if (mode_ != "sum" && mode_ != "mean" && mode_ != "max")
    fail("[EmbeddingBag] mode has to be one of sum, mean or max, got '", mode_, "'");
  register_parameter("weight", empty({num_embeddings, embedding_dim}));
  reset_parameters();
}

std::shared_ptr<EmbeddingBagImpl> EmbeddingBagImpl::from_pretrained(const Tensor& embeddings, bool freeze,
                                                                    std::optional<double> max_norm, double norm_type,
                                                                    bool scale_grad_by_freq, std::string mode,
                                                                    bool include_last_offset,
                                                                    std::optional<int64_t> padding_idx) {
  detail::check_pretrained(embeddings, "EmbeddingBag");
  auto m = std::make_shared<EmbeddingBagImpl>(embeddings.size(0), embeddings.size(1), max_norm, norm_type,
                                              scale_grad_by_freq, std::move(mode), include_last_offset, padding_idx);
  m->register_parameter("weight", embeddings.detach(), !freeze);
  return m;
}

void EmbeddingBagImpl::reset_parameters() { detail::reset_table(parameter("weight"), padding_idx_); }

Tensor EmbeddingBagImpl::forward(const Tensor& input, const std::optional<Tensor>& offsets,
                                 const std::optional<Tensor>& per_sample_weights) {
  return functional::embedding_bag(input, parameter("weight"), offsets, max_norm_, norm_type_, scale_grad_by_freq_,
                                   mode_, per_sample_weights, include_last_offset_, padding_idx_);
}

std::string EmbeddingBagImpl::extra_repr() const {
  // torch's order and defaults: only what differs from them
  std::ostringstream s;
  s << num_embeddings_ << ", " << embedding_dim_;
  if (max_norm_) s << ", max_norm=" << python_repr(*max_norm_);
  if (norm_type_ != 2.0) s << ", norm_type=" << python_repr(norm_type_);
  if (scale_grad_by_freq_) s << ", scale_grad_by_freq=True";
  s << ", mode='" << mode_ << "'";
  if (padding_idx_) s << ", padding_idx=" << *padding_idx_;
  return s.str();
}

}  // namespace ug::nn
