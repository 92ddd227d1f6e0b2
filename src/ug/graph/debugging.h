// Finding where NaN and Inf come from (the articles' troubleshooting advice): checks on
// forward values, like tf.debugging; backward's side is AnomalyMode (grad_mode.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ug/core/tensor.h"

namespace ug::debugging {

/** Throws RuntimeError with `message` when x holds NaN or Inf (tf.debugging.check_numerics);
 *  in a compiled program, naming where the op was traced. */
const Tensor& check_numerics(const Tensor& x, std::string_view message);

/** From now on every op checks its floating output and names itself when it finds NaN/Inf. */
void enable_check_numerics();
void disable_check_numerics();
bool check_numerics_enabled();

/** Where the op running now on this thread was traced, when a compiled program runs it (its
 *  node keeps the Python line that made it); "" otherwise. */
const std::string& traced_at();

/** While alive, ops on this thread run for a program's node traced at `where`. */
class TracedAt {
 public:
  explicit TracedAt(const std::string& where);
  ~TracedAt();
  TracedAt(const TracedAt&) = delete;
  TracedAt& operator=(const TracedAt&) = delete;

 private:
  const std::string* previous_;
};

/** Called by ops on their result; free when checking is off. */
inline void check_output(const Tensor& out, const char* op) {
  if (check_numerics_enabled()) check_numerics(out, std::string("output of ") + op);
}

/** Describes where the current op was called from (Python installs one that reads the
 *  interpreter's stack); anomaly mode stores it on each recorded node. For an op a program
 *  runs, where it was traced comes first. */
void set_trace_provider(std::function<std::string()> provider);
std::string current_trace();

/** Names the line of user code running now (Python installs one: the innermost frame outside
 *  unigrad); a program's trace keeps it on each node. "" without one. */
void set_source_provider(std::function<std::string()> provider);
std::string current_source();

}  // namespace ug::debugging
