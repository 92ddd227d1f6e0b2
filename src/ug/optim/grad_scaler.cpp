#include "ug/optim/grad_scaler.h"

#include <cmath>

#include "ug/graph/grad_mode.h"
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
    : scale_(static_cast<float>(o.init_scale)),
      growth_factor_(o.growth_factor),
      backoff_factor_(o.backoff_factor),
      growth_interval_(o.growth_interval),
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
  return outputs.mul(static_cast<double>(scale_));
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
  // The reciprocal in double, then float32: torch's rounding.
  const double inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  NoGradGuard no_grad;
  bool found_inf = false;
  for (optim::ParamGroup& group : optimizer.param_groups())
    for (Tensor& p : group.params()) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (g.dtype() == DType::Float16)
        fail("[GradScaler] attempting to unscale float16 gradients (parameter of shape ", p.shape(),
             "): keep the parameters in float32 and let autocast run the ops in float16");
      found_inf = found_inf || !g.isfinite().all().item<bool>();
      g.mul_(inv_scale);
    }
  state.found_inf = found_inf;
  state.stage = Stage::Unscaled;
}

std::optional<Tensor> GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) return optimizer.step();
  PerOptimizer& state = per_optimizer_[&optimizer];
  if (state.stage == Stage::Stepped)
    fail<RuntimeError>("[GradScaler] step() has already been called since the last update()");
  if (state.stage == Stage::Ready) unscale_(optimizer);
  std::optional<Tensor> result;
  if (!state.found_inf) result = optimizer.step();
  state.stage = Stage::Stepped;
  return result;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  if (new_scale) {
    if (!(*new_scale > 0.0)) fail("[GradScaler] update: new_scale must be positive, got ", *new_scale);
    scale_ = static_cast<float>(*new_scale);
  } else {
    bool any_checked = false, found_inf = false;
    for (const auto& [opt, state] : per_optimizer_) {
      if (state.stage == Stage::Ready) continue;
      any_checked = true;
      found_inf = found_inf || state.found_inf;
    }
    if (!any_checked) fail<RuntimeError>("[GradScaler] update: no inf checks were recorded prior to update()");
    if (found_inf) {
      scale_ *= static_cast<float>(backoff_factor_);
      growth_tracker_ = 0;
    } else if (++growth_tracker_ == growth_interval_) {
      const float grown = scale_ * static_cast<float>(growth_factor_);
      if (std::isfinite(grown)) scale_ = grown;
      growth_tracker_ = 0;
    }
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return enabled_ ? static_cast<double>(scale_) : 1.0; }

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
  return {static_cast<double>(scale_), growth_factor_, backoff_factor_, growth_interval_, growth_tracker_};
}

void GradScaler::load_state_dict(const GradScalerState& s) {
  check_factors(s.growth_factor, s.backoff_factor, s.growth_interval);
  if (!(s.scale > 0.0)) fail("[GradScaler] load_state_dict: scale must be positive, got ", s.scale);
  scale_ = static_cast<float>(s.scale);
  growth_factor_ = s.growth_factor;
  backoff_factor_ = s.backoff_factor;
  growth_interval_ = s.growth_interval;
  growth_tracker_ = s.growth_tracker;
}

}  // namespace ug::amp
