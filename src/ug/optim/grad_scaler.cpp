#include "ug/optim/grad_scaler.h"

#include <cmath>

#include "ug/graph/capture.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::amp {

namespace {

void check_factors(double growth, double backoff, int64_t interval) {
  if (!(growth > 1.0)) fail("[GradScaler] growth_factor must be > 1, got ", growth);
  if (!(backoff > 0.0 && backoff < 1.0)) fail("[GradScaler] backoff_factor must be in (0, 1), got ", backoff);
  if (interval <= 0) fail("[GradScaler] growth_interval must be > 0, got ", interval);
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions o)
    : scale_(scalar_tensor(static_cast<float>(o.init_scale), {.dtype = DType::Float32})),
      growth_factor_(o.growth_factor),
      backoff_factor_(o.backoff_factor),
      growth_interval_(o.growth_interval),
      growth_tracker_(scalar_tensor(int64_t{0}, {.dtype = DType::Int64})),
      enabled_(o.enabled) {
  if (!(o.init_scale > 0.0) || !std::isfinite(o.init_scale))
    fail("[GradScaler] init_scale must be a positive finite number, got ", o.init_scale);
  check_factors(growth_factor_, backoff_factor_, growth_interval_);
}

Tensor GradScaler::scale(const Tensor& outputs) const {
  if (!enabled_) return outputs;
  if (!is_floating(outputs.dtype()))
    fail<TypeError>("[GradScaler] scale: outputs must be floating point, got ", outputs.dtype(), " of shape ",
                    outputs.shape());
  return outputs.mul(scale_);
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) const {
  std::vector<Tensor> out;
  out.reserve(outputs.size());
  for (const Tensor& t : outputs) out.push_back(scale(t));
  return out;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  PerOptimizer& state = per_optimizer_[&optimizer];
  if (state.stage == Stage::Unscaled)
    fail<RuntimeError>("[GradScaler] unscale_() has already been called on this optimizer since the last update()");
  if (state.stage == Stage::Stepped) fail<RuntimeError>("[GradScaler] unscale_() is being called after step()");
  NoGradGuard no_grad;
  // The reciprocal in double, then float32: torch's rounding.
  const Tensor inv_scale = scale_.to(DType::Float64).reciprocal().to(DType::Float32);
  Tensor found_inf = scalar_tensor(false, {.dtype = DType::Bool});
  for (optim::ParamGroup& group : optimizer.param_groups())
    for (Tensor& p : group.params()) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (g.dtype() == DType::Float16)
        fail("[GradScaler] attempting to unscale float16 gradients (parameter of shape ", p.shape(),
             "): keep the parameters in float32 and let autocast run the ops in float16");
      found_inf = found_inf.logical_or(g.isfinite().all().logical_not());
      g.mul_(inv_scale);
    }
  state.found_inf = found_inf;
  state.stage = Stage::Unscaled;
}

void next_scale(Tensor& scale, Tensor& tracker, const Tensor& found_inf, double growth, double backoff,
                int64_t interval) {
  NoGradGuard no_grad;
  const Tensor zero = zeros_like(tracker);
  const Tensor count = where(found_inf, zero, tracker + 1);
  const Tensor grow = count.eq(interval);
  const Tensor grown = scale * static_cast<double>(static_cast<float>(growth));
  const Tensor next = where(found_inf, scale * static_cast<double>(static_cast<float>(backoff)),
                            where(grow.logical_and(grown.isfinite()), grown, scale));
  tracker.copy_(where(grow, zero, count));
  scale.copy_(next);
}

std::optional<Tensor> GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) return optimizer.step();
  PerOptimizer& state = per_optimizer_[&optimizer];
  if (state.stage == Stage::Stepped)
    fail<RuntimeError>("[GradScaler] step() has already been called since the last update()");
  if (state.stage == Stage::Ready) unscale_(optimizer);
  std::optional<Tensor> result;
  // A compiled step decides at every run whether to skip; it cannot say which it did.
  if (graph::detail::current_capture) optimizer.step_unless(state.found_inf);
  else if (!state.found_inf.item<bool>()) result = optimizer.step();
  state.stage = Stage::Stepped;
  return result;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  if (new_scale) {
    if (!(*new_scale > 0.0)) fail("[GradScaler] update: new_scale must be positive, got ", *new_scale);
    NoGradGuard no_grad;
    scale_.copy_(scalar_tensor(static_cast<float>(*new_scale), {.dtype = DType::Float32}));
  } else {
    bool any_checked = false;
    Tensor found_inf = scalar_tensor(false, {.dtype = DType::Bool});
    for (const auto& [opt, state] : per_optimizer_) {
      if (state.stage == Stage::Ready) continue;
      any_checked = true;
      found_inf = found_inf.logical_or(state.found_inf);
    }
    if (!any_checked) fail<RuntimeError>("[GradScaler] update: no inf checks were recorded prior to update()");
    next_scale(scale_, growth_tracker_, found_inf, growth_factor_, backoff_factor_, growth_interval_);
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return enabled_ ? scale_.item<double>() : 1.0; }

void GradScaler::set_growth_factor(double f) {
  check_factors(f, backoff_factor_, growth_interval_);
  growth_factor_ = f;
}

void GradScaler::set_backoff_factor(double f) {
  check_factors(growth_factor_, f, growth_interval_);
  backoff_factor_ = f;
}

void GradScaler::set_growth_interval(int64_t n) {
  check_factors(growth_factor_, backoff_factor_, n);
  growth_interval_ = n;
}

GradScalerState GradScaler::state_dict() const {
  return {scale_.item<double>(), growth_factor_, backoff_factor_, growth_interval_, growth_tracker_.item<int64_t>()};
}

void GradScaler::load_state_dict(const GradScalerState& s) {
  check_factors(s.growth_factor, s.backoff_factor, s.growth_interval);
  if (!(s.scale > 0.0)) fail("[GradScaler] load_state_dict: scale must be positive, got ", s.scale);
  // In place: a compiled step holds these tensors.
  NoGradGuard no_grad;
  scale_.copy_(scalar_tensor(static_cast<float>(s.scale), {.dtype = DType::Float32}));
  growth_tracker_.copy_(scalar_tensor(s.growth_tracker, {.dtype = DType::Int64}));
  growth_factor_ = s.growth_factor;
  backoff_factor_ = s.backoff_factor;
  growth_interval_ = s.growth_interval;
}

}  // namespace ug::amp
