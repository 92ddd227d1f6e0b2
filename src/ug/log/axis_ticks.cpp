#include "ug/log/axis_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ug::logging {

namespace {

/** 1, 2, 5 or 10 times a power of ten near x: the nearest when `round`, else the next above. */
double nice_number(double x, bool round) {
  double power = std::pow(10.0, std::floor(std::log10(x)));
  double f = x / power;
  double nice = round ? (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) : (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
  return nice * power;
}

/** The distance between ticks: about `target` of them over [lo, hi]. */
double tick_step(double lo, double hi, int target, bool integer) {
  double step = nice_number(nice_number(hi - lo, false) / std::max(target - 1, 1), true);
  return integer ? std::max(step, 1.0) : step;
}

/** Ticks first + i * step up to hi on the axis [lo, hi], with 0 exactly 0 (never -0 or 1e-17). */
AxisTicks ticks_from(double first, double lo, double hi, double step) {
  AxisTicks ticks;
  ticks.lo = lo;
  ticks.hi = hi;
  auto count = static_cast<int>(std::floor((hi - first) / step + 1e-9));
  for (int i = 0; i <= count; ++i) {
    double v = first + i * step;
    ticks.values.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  ticks.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step))));
  return ticks;
}

}  // namespace

AxisTicks nice_ticks(double lo, double hi, int target, bool integer) {
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  double step = tick_step(lo, hi, target, integer);
  double first = std::floor(lo / step) * step;
  return ticks_from(first, first, std::ceil(hi / step) * step, step);
}

AxisTicks ticks_within(double lo, double hi, int target, bool integer) {
  double step = tick_step(lo, hi, target, integer);
  return ticks_from(std::ceil(lo / step) * step, lo, hi, step);
}

std::string tick_label(double value, const AxisTicks& ticks) {
  char text[64];
  double magnitude = std::max(std::abs(ticks.lo), std::abs(ticks.hi));
  if (ticks.decimals > 6 || magnitude >= 1e7) std::snprintf(text, sizeof text, "%g", value);
  else std::snprintf(text, sizeof text, "%.*f", ticks.decimals, value);
  return text;
}

}  // namespace ug::logging
