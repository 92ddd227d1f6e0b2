// What fit, evaluate and predict print: a Keras-style progress bar redrawn in place on a
// terminal (ETA, time per step, samples/s, running metrics), or one line per epoch when the
// output is not a terminal or verbose is 2. Output goes through a sink, so Python can send it
// to sys.stdout (Jupyter, pytest capture) and tests can read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "ug/train/callback.h"

namespace ug::train {

/** Where messages go and whether it is a terminal (only then is the bar redrawn in place). */
struct Output {
  std::function<void(std::string_view)> write;
  bool terminal = false;
  /** stdout, a terminal when isatty says so. */
  static Output standard();
  void line(std::string_view text) const;
};

class ProgressBar {
 public:
  /** total: steps in the pass, or -1 when unknown. verbose: 1 the bar (a line per pass when
   *  the output is not a terminal), 2 a line per pass. */
  ProgressBar(const Output& out, int64_t total, int verbose);
  /** After step `step` (from 1), `samples` samples so far; redraws at most every 50 ms. */
  void update(int64_t step, int64_t samples, const Logs& logs);
  /** The final line with the pass's metrics (and the validation ones). */
  void finish(int64_t steps, int64_t samples, const Logs& logs);

 private:
  using Clock = std::chrono::steady_clock;
  std::string line(int64_t step, int64_t samples, const Logs& logs, bool final) const;

  const Output& out_;
  int64_t total_;
  bool in_place_;
  Clock::time_point start_, last_draw_;
  size_t last_width_ = 0;
};

/** "loss: 0.3512 - accuracy: 0.8750" (values below 1e-3 in e-notation, as Keras prints them). */
std::string format_logs(const Logs& logs);

}  // namespace ug::train
