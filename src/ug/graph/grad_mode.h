// Whether ops record the graph that backward walks: on by default, off inside no_grad
// (ug::NoGradGuard in C++, `with ug.no_grad():` in Python). Per thread, like PyTorch.
#pragma once

#include <cstdint>

namespace ug {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);

  /** The mode with the number of the set_enabled call that put it so (a thread numbers its
   *  calls from 1; 0: the default). A scope restores both when it ends, so a capture can tell a
   *  no_grad block inside the traced function (set after the trace began) from grad mode off
   *  around the whole trace (graph/op_call.cpp). */
  struct State {
    bool enabled;
    uint64_t set_by;
  };
  static State state();
  static void restore(State s);
  /** How many set_enabled calls this thread has made. */
  static uint64_t sets_made();
};

/** Sets grad mode for a scope and restores the previous mode when it ends. */
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::state()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::restore(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  GradMode::State prev_;
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
