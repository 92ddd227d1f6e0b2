#include "ug/nn/layers/loss.h"

namespace ug::nn {

namespace F = functional;

LossImpl::LossImpl(std::string type_name, std::string reduction, bool batchmean_allowed)
    : Module(std::move(type_name)), reduction_(std::move(reduction)) {
  if (reduction_ != "mean" && reduction_ != "sum" && reduction_ != "none" &&
      !(batchmean_allowed && reduction_ == "batchmean"))
    fail("[", this->type_name(), "] reduction must be \"mean\", \"sum\"", batchmean_allowed ? ", \"batchmean\"" : "",
         " or \"none\", got \"", reduction_, "\"");
}

// Class weights are buffers, as in PyTorch: they follow .to() and are not trained.
CrossEntropyLossImpl::CrossEntropyLossImpl(Tensor weight, int64_t ignore_index, std::string reduction,
                                           double label_smoothing)
    : LossImpl("CrossEntropyLoss", std::move(reduction)),
      ignore_index_(ignore_index),
      label_smoothing_(label_smoothing) {
  register_buffer("weight", std::move(weight));
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::cross_entropy(input, target,
                          {.weight = buffer("weight"),
                           .ignore_index = ignore_index_,
                           .reduction = reduction(),
                           .label_smoothing = label_smoothing_});
}

NLLLossImpl::NLLLossImpl(Tensor weight, int64_t ignore_index, std::string reduction)
    : LossImpl("NLLLoss", std::move(reduction)), ignore_index_(ignore_index) {
  register_buffer("weight", std::move(weight));
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::nll_loss(input, target,
                     {.weight = buffer("weight"), .ignore_index = ignore_index_, .reduction = reduction()});
}

BCELossImpl::BCELossImpl(Tensor weight, std::string reduction) : LossImpl("BCELoss", std::move(reduction)) {
  register_buffer("weight", std::move(weight));
}

Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy(input, target, buffer("weight"), reduction());
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(Tensor weight, std::string reduction, Tensor pos_weight)
    : LossImpl("BCEWithLogitsLoss", std::move(reduction)) {
  register_buffer("weight", std::move(weight));
  register_buffer("pos_weight", std::move(pos_weight));
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy_with_logits(
      input, target, {.weight = buffer("weight"), .reduction = reduction(), .pos_weight = buffer("pos_weight")});
}

}  // namespace ug::nn
