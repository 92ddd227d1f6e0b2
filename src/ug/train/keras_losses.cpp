#include "ug/train/keras_losses.h"

#include "ug/core/error.h"
#include "ug/ops/binary.h"

namespace ug::train {

namespace {

const char* const kReductions[] = {"sum_over_batch_size", "mean", "mean_with_sample_weight", "sum", "none"};

bool known_reduction(const std::string& r) {
  for (const char* known : kReductions)
    if (r == known) return true;
  return false;
}

}  // namespace

KerasLoss::KerasLoss(const std::string& kind, KerasLossOptions options)
    : kind_(canonical_loss_name(kind)), options_(std::move(options)) {
  if (!known_reduction(options_.reduction))
    fail("[", kind_, "] unknown reduction \"", options_.reduction,
         "\"; expected \"sum_over_batch_size\", \"mean\", \"mean_with_sample_weight\", \"sum\" or \"none\"");
  if (options_.name.empty()) options_.name = kind_;
  per_sample_ = per_sample_loss_by_name(kind_, options_.from_logits, options_.delta);
}

Tensor KerasLoss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  Tensor losses = per_sample_(y_pred, y_true), w;
  if (sample_weight.defined()) {
    // To the losses' rank, as Keras's squeeze_or_expand_to_same_rank: [N, 1] weights on [N]
    // losses lose their last dim, [N] weights on [N, T] losses gain one.
    w = sample_weight.to(losses.dtype());
    while (w.dim() > losses.dim() && w.size(-1) == 1) w = w.squeeze({-1});
    while (w.dim() < losses.dim()) w = w.unsqueeze(-1);
    losses = losses * w;
  }
  const std::string& r = options_.reduction;
  if (r == "none" || losses.dim() == 0 || losses.numel() == 0) return losses;  // Keras's reduce_values
  const Tensor total = losses.sum();
  if (r == "sum") return total;
  const Tensor divisor = r == "mean_with_sample_weight" && w.defined()
                             ? w.sum()
                             : full({}, Scalar(static_cast<double>(losses.numel())), {.dtype = total.dtype()});
  return where(divisor.eq(Scalar(0)), Scalar(0), total / divisor);  // Keras's divide_no_nan
}

LossFn KerasLoss::as_loss_fn() const {
  KerasLoss loss = *this;
  return [loss](const Tensor& output, const Tensor& target) { return loss(target, output); };
}

Tensor keras_loss(const std::string& kind, const Tensor& y_true, const Tensor& y_pred, bool from_logits,
                  double huber_delta) {
  return per_sample_loss_by_name(kind, from_logits, huber_delta)(y_pred, y_true);
}

}  // namespace ug::train
