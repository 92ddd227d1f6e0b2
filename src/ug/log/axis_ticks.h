// Chart axes with round-numbered ticks (Heckbert's "nice numbers", Graphics Gems 1990): steps
// of 1, 2 or 5 times a power of ten, and an axis range widened to whole steps.
#pragma once

#include <string>
#include <vector>

namespace ug::logging {

struct AxisTicks {
  double lo = 0, hi = 1;       // the axis range
  std::vector<double> values;  // multiples of the step within [lo, hi]
  int decimals = 0;            // fraction digits that tell the ticks apart
};

/** About `target` ticks covering [lo, hi], the axis widened to the ticks around them. An
 *  empty range (lo == hi) is widened around its value; `integer` keeps the step a whole
 *  number (epochs). */
AxisTicks nice_ticks(double lo, double hi, int target = 5, bool integer = false);

/** Round-numbered ticks inside [lo, hi], the range kept as given (lo < hi). */
AxisTicks ticks_within(double lo, double hi, int target = 5, bool integer = false);

/** A tick's label: fixed-point with ticks.decimals digits, or %g for very large or small
 *  values; never "-0". */
std::string tick_label(double value, const AxisTicks& ticks);

}  // namespace ug::logging
