// Keras's loss objects (keras.losses.SparseCategoricalCrossentropy(from_logits=True), ...):
// called in Keras's order, loss(y_true, y_pred, sample_weight), they reduce the per-sample
// losses of losses.h as Keras's reduction says; compile() takes them in torch's order.
#pragma once

#include <string>

#include "ug/train/losses.h"

namespace ug::train {

struct KerasLossOptions {
  bool from_logits = false;
  /** "sum_over_batch_size" (Keras's default: the weighted losses' sum over their count),
   *  "mean" (the same), "mean_with_sample_weight" (over the weights' sum), "sum" or "none". */
  std::string reduction = "sum_over_batch_size";
  /** Keras's loss.name; "" gives the loss's own ("sparse_categorical_crossentropy"). */
  std::string name = "";
  double delta = 1.0;  // Huber's
};

class KerasLoss {
 public:
  /** kind: a loss name of losses.h ("sparse_categorical_crossentropy", "mse", "huber", ...). */
  explicit KerasLoss(const std::string& kind, KerasLossOptions options = {});
  /** The loss of predictions y_pred against targets y_true, each sample's weighted by
   *  sample_weight where it is given (one weight a sample, or broadcast to the losses). */
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) const;
  /** loss(output, target) as compile() takes it. */
  LossFn as_loss_fn() const;
  const std::string& kind() const { return kind_; }
  const std::string& name() const { return options_.name; }
  const KerasLossOptions& options() const { return options_; }

 private:
  std::string kind_;
  KerasLossOptions options_;
  LossFn per_sample_;
};

/** keras.losses.<kind>(y_true, y_pred): the unreduced per-sample losses (huber_delta: Huber's delta). */
Tensor keras_loss(const std::string& kind, const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                  double huber_delta = 1.0);

}  // namespace ug::train
