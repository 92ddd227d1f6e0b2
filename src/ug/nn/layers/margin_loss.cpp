#include "ug/nn/layers/margin_loss.h"

namespace ug::nn {

namespace F = functional;

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(Tensor weight, std::string reduction)
    : LossImpl("MultiLabelSoftMarginLoss", std::move(reduction)) {
  register_buffer("weight", std::move(weight));
}

Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_soft_margin_loss(input, target, buffer("weight"), reduction());
}

TripletMarginLossImpl::TripletMarginLossImpl(double margin, double p, double eps, bool swap, std::string reduction)
    : LossImpl("TripletMarginLoss", std::move(reduction)), margin_(margin), p_(p), eps_(eps), swap_(swap) {
  if (!(margin > 0)) fail("[TripletMarginLoss] expected margin to be greater than 0, got ", margin, " instead");
}

MultiMarginLossImpl::MultiMarginLossImpl(int64_t p, double margin, Tensor weight, std::string reduction)
    : LossImpl("MultiMarginLoss", std::move(reduction)), p_(p), margin_(margin) {
  if (p != 1 && p != 2) fail("[MultiMarginLoss] only p == 1 and p == 2 supported, got p = ", p);
  if (weight.defined() && weight.dim() != 1)
    fail("[MultiMarginLoss] expected weight to be None or 1D tensor, got ", weight.dim(), "D instead");
  register_buffer("weight", std::move(weight));
}

Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multi_margin_loss(input, target, p_, margin_, buffer("weight"), reduction());
}

}  // namespace ug::nn
