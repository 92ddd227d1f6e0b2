// Finding where NaN and Inf come from (the articles' troubleshooting advice): checks on
// forward values, like tf.debugging; backward's side is AnomalyMode (grad_mode.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ug/core/tensor.h"

namespace ug::debugging {

/** Throws RuntimeError with `message` when x holds NaN or Inf (tf.debugging.check_numerics). */
const Tensor& check_numerics(const Tensor& x, std::string_view message);

/** From now on every op checks its floating output and names itself when it finds NaN/Inf. */
void enable_check_numerics();
void disable_check_numerics();
bool check_numerics_enabled();

/** Called by ops on their result; free when checking is off. */
inline void check_output(const Tensor& out, const char* op) {
  if (check_numerics_enabled()) check_numerics(out, std::string("output of ") + op);
}

/** Describes where the current op was called from (Python installs one that reads the
 *  interpreter's stack); anomaly mode stores it on each recorded node. */
void set_trace_provider(std::function<std::string()> provider);
std::string current_trace();

}  // namespace ug::debugging
