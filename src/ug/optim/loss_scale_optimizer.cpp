#include "ug/optim/loss_scale_optimizer.h"

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/optim/grad_scaler.h"

namespace ug::optim::keras {

LossScaleOptimizer::LossScaleOptimizer(std::shared_ptr<Optimizer> inner, double initial_scale,
                                       int64_t dynamic_growth_steps)
    : inner_(std::move(inner)), initial_scale_(initial_scale), growth_steps_(dynamic_growth_steps) {
  if (!inner_) fail<ValueError>("[LossScaleOptimizer] inner_optimizer is required");
  if (!(initial_scale > 0))
    fail<ValueError>("[LossScaleOptimizer] initial_scale must be positive, got ", initial_scale);
  if (dynamic_growth_steps < 1)
    fail<ValueError>("[LossScaleOptimizer] dynamic_growth_steps must be at least 1, got ", dynamic_growth_steps);
  scale_ = scalar_tensor(static_cast<float>(initial_scale), {.dtype = DType::Float32});
  counter_ = scalar_tensor(int64_t{0}, {.dtype = DType::Int64});
}

// A float16 loss is scaled in float32, as Keras's multiply by its float32 scale promotes it.
Tensor LossScaleOptimizer::scale_loss(const Tensor& loss) const { return loss * scale_; }

void LossScaleOptimizer::apply_gradients(const std::vector<std::pair<Tensor, Tensor>>& given) {
  NoGradGuard no_grad;
  // Summed over the replicas first (inside strategy.run), so that every replica skips alike.
  const std::vector<std::pair<Tensor, Tensor>> grads_and_vars = cross_replica(given);
  std::vector<Tensor> variables;
  std::vector<std::pair<Tensor, Tensor>> unscaled;
  Tensor found_inf = scalar_tensor(false, {.dtype = DType::Bool});
  for (const auto& [grad, var] : grads_and_vars) {
    variables.push_back(var);
    if (grad.defined()) found_inf = found_inf.logical_or(grad.isfinite().all().logical_not());
    unscaled.emplace_back(grad.defined() ? grad / scale_ : grad, var);
  }
  inner_->build(std::move(variables));  // as its own apply_gradients would (once)
  inner_->apply_gradients_unless(unscaled, found_inf);
  amp::next_scale(scale_, counter_, found_inf, 2.0, 0.5, growth_steps_);
}

}  // namespace ug::optim::keras
