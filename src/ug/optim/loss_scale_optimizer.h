// keras.optimizers.LossScaleOptimizer (Keras 3, also keras.mixed_precision's): dynamic loss
// scaling around another Keras optimizer, for a float16 custom training loop (fit scales its
// loss itself, train/trainer.h).
//
//   LossScaleOptimizer opt(std::make_shared<keras::Adam>());
//   Tensor scaled = opt.scale_loss(loss);               // loss times the scale
//   opt.apply_gradients(pairs_of(grad(scaled), vars));  // unscaled, or skipped after inf/NaN
//
// Gradients that hold inf or NaN skip the step and halve the scale; after dynamic_growth_steps
// steps without one the scale doubles (next_scale, grad_scaler.h). The scale and the count are
// tensors, so a compiled step decides at every run.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "ug/optim/keras.h"

namespace ug::optim::keras {

class LossScaleOptimizer {
 public:
  explicit LossScaleOptimizer(std::shared_ptr<Optimizer> inner, double initial_scale = 32768.0,
                              int64_t dynamic_growth_steps = 2000);

  /** loss times the scale (Keras's scale_loss). */
  Tensor scale_loss(const Tensor& loss) const;
  /** The gradients of the scaled loss divided by the scale, then the inner optimizer's
   *  apply_gradients, unless one of them holds inf or NaN; then the scale's rule. */
  void apply_gradients(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars);

  /** The scale now (Keras's dynamic_scale), a 0-d float32 tensor. */
  const Tensor& dynamic_scale() const { return scale_; }
  /** Finite steps since the scale last changed (Keras's step_counter). */
  const Tensor& step_counter() const { return counter_; }
  double initial_scale() const { return initial_scale_; }
  int64_t dynamic_growth_steps() const { return growth_steps_; }
  Optimizer& inner_optimizer() const { return *inner_; }
  const std::shared_ptr<Optimizer>& inner_ptr() const { return inner_; }

 private:
  std::shared_ptr<Optimizer> inner_;
  double initial_scale_;
  int64_t growth_steps_;
  Tensor scale_, counter_;
};

}  // namespace ug::optim::keras
