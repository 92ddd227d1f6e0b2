// Dynamic loss scaling for float16 training (torch.amp.GradScaler). A float16 gradient
// underflows to zero below 6e-8; scaling the loss by S before backward scales every gradient
// by S, unscale_ divides it out again in float32. A step whose gradients hold inf or NaN (S
// was too large) is skipped and S shrinks by backoff_factor; after growth_interval steps
// without one, S grows by growth_factor.
//
//   ug::amp::GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.step(opt);  // skipped when a gradient is inf/NaN
//   scaler.update();
//
// The scale, the growth count and the inf checks are tensors, as torch keeps them, so that a
// compiled training step computes them at every run: a number read at the trace would be
// kept for every later step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/optim/optimizer.h"

namespace ug::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

/** What state_dict saves (torch's keys: scale, growth_factor, backoff_factor,
 *  growth_interval, _growth_tracker). */
struct GradScalerState {
  double scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;
};

/** The dynamic scale after one step, the rule of torch's GradScaler.update and Keras's
 *  LossScaleOptimizer: after inf or NaN gradients (found_inf) the scale times backoff and the
 *  count (tracker) from 0; else the count + 1, and at `interval` the scale times growth (where
 *  that stays finite) and the count from 0. Tensors, so that a compiled step follows it. */
void next_scale(Tensor& scale, Tensor& tracker, const Tensor& found_inf, double growth, double backoff,
                int64_t interval);

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  /** outputs times the scale (unchanged when disabled). */
  Tensor scale(const Tensor& outputs) const;
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs) const;
  /** Divides the optimizer's gradients by the scale in place and records whether any is inf
   *  or NaN; once per optimizer between updates (then clip gradients, read them, ...). */
  void unscale_(optim::Optimizer& optimizer);
  /** unscale_ (if not yet done), then optimizer.step() unless a gradient was inf or NaN:
   *  returns step()'s result, or nothing when the step was skipped. */
  std::optional<Tensor> step(optim::Optimizer& optimizer);
  /** Adjusts the scale from the steps since the last update, or sets it to new_scale. */
  void update(std::optional<double> new_scale = std::nullopt);

  /** The current scale (1.0 when disabled, as torch). */
  double get_scale() const;
  bool is_enabled() const { return enabled_; }
  double growth_factor() const { return growth_factor_; }
  void set_growth_factor(double f);
  double backoff_factor() const { return backoff_factor_; }
  void set_backoff_factor(double f);
  int64_t growth_interval() const { return growth_interval_; }
  void set_growth_interval(int64_t n);

  GradScalerState state_dict() const;
  void load_state_dict(const GradScalerState& state);
  /** The tensors its state lives in, by name (the scale, the growth tracker): what a compiled
   *  step that only reads them must read live. */
  std::vector<std::pair<std::string, Tensor>> state_tensors() const {
    return {{"loss_scale", scale_}, {"loss_scale_growth_tracker", growth_tracker_}};
  }

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    Tensor found_inf;  // bool, 0-d: a gradient held inf or NaN
  };

  Tensor scale_;  // float32, 0-d, as torch keeps it, so that growth and backoff round alike
  double growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  Tensor growth_tracker_;  // int64, 0-d: steps since the scale last changed
  bool enabled_;
  std::unordered_map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace ug::amp
