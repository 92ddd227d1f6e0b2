// torch's c10::InferenceMode guard: no recording and inference mode for a scope.
#pragma once

#include "ug/core/inference_mode.h"
#include "ug/graph/grad_mode.h"

namespace ug {

/** Tensors allocated in the scope are inference tensors (is_inference); ops record nothing.
 *  enabled=false, as torch's: tensors made are ordinary ones, and recording is on. */
class InferenceModeGuard {
 public:
  explicit InferenceModeGuard(bool enabled = true)
      : prev_grad_(GradMode::state()), prev_inference_(InferenceMode::is_enabled()) {
    GradMode::set_enabled(!enabled);
    InferenceMode::set_enabled(enabled);
  }
  ~InferenceModeGuard() {
    GradMode::restore(prev_grad_);
    InferenceMode::set_enabled(prev_inference_);
  }
  InferenceModeGuard(const InferenceModeGuard&) = delete;
  InferenceModeGuard& operator=(const InferenceModeGuard&) = delete;

 private:
  GradMode::State prev_grad_;
  bool prev_inference_;
};

}  // namespace ug
