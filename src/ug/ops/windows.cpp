#include "ug/ops/windows.h"

#include <cmath>
#include <functional>
#include <numbers>

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/unary.h"

namespace ug {
namespace {

/** The window of M = N (+ 1 when periodic) points as f(x), x = n / (M - 1) in [0, 1], computed in
 *  float64 and returned in the requested floating dtype; its first N values. */
Tensor window(const char* name, int64_t length, bool periodic, Options opts,
              const std::function<Tensor(const Tensor&)>& f) {
  const DType dtype = opts.dtype.value_or(get_default_dtype());
  if (!is_floating(dtype)) fail<TypeError>("[", name, "] expected a floating dtype, got ", dtype);
  if (length < 0) fail("[", name, "] window_length must be non-negative, got ", length);
  if (length <= 1) return ones({length}, {.dtype = dtype, .device = opts.device});
  const int64_t points = periodic ? length + 1 : length;
  const Tensor x = arange(length, {.dtype = DType::Float64, .device = opts.device}) / double(points - 1);
  return f(x).to(dtype);
}

Tensor cosine_sum(const char* name, int64_t length, bool periodic, Options opts, double a0, double a1, double a2) {
  return window(name, length, periodic, opts, [&](const Tensor& x) {
    const Tensor angle = x * (2 * std::numbers::pi);
    Tensor w = a0 - a1 * angle.cos();
    return a2 == 0 ? w : w + a2 * (2 * angle).cos();
  });
}

}  // namespace

Tensor hann_window(int64_t length, bool periodic, Options opts) {
  return cosine_sum("hann_window", length, periodic, opts, 0.5, 0.5, 0);
}

Tensor hamming_window(int64_t length, bool periodic, double alpha, double beta, Options opts) {
  return cosine_sum("hamming_window", length, periodic, opts, alpha, beta, 0);
}

Tensor blackman_window(int64_t length, bool periodic, Options opts) {
  return cosine_sum("blackman_window", length, periodic, opts, 0.42, 0.5, 0.08);
}

Tensor bartlett_window(int64_t length, bool periodic, Options opts) {
  return window("bartlett_window", length, periodic, opts, [](const Tensor& x) { return 1 - (2 * x - 1).abs(); });
}

Tensor kaiser_window(int64_t length, bool periodic, double beta, Options opts) {
  return window("kaiser_window", length, periodic, opts, [&](const Tensor& x) {
    const Tensor r = 2 * x - 1;
    return i0(beta * clamp(1 - r * r, 0, std::nullopt).sqrt()) / std::cyl_bessel_i(0.0, beta);
  });
}

}  // namespace ug
