// Whether ops record the graph that backward walks: on by default, off inside no_grad
// (ug::NoGradGuard in C++, `with ug.no_grad():` in Python). Per thread, like PyTorch.
#pragma once

namespace ug {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/** Sets grad mode for a scope and restores the previous mode when it ends. */
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

/** torch::NoGradGuard: no recording in this scope. */
struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};
/** Recording on in this scope, even inside a no_grad one. */
struct EnableGradGuard : AutoGradMode {
  EnableGradGuard() : AutoGradMode(true) {}
};

/** Anomaly mode: backward checks every gradient for NaN/Inf and names the op that made it. */
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

}  // namespace ug
