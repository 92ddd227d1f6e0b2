// Helpers shared by the C++ tests: read a tensor's values, compare them, build shapes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <vector>

#include "ug/ug.h"

namespace ug::test {

/** The elements in row-major order, as doubles (any dtype, any layout, graph or not). */
inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

inline Shape shape(std::initializer_list<int64_t> dims) { return Shape(dims); }

/** The exact shape and values. */
inline void expect_tensor(const Tensor& t, std::initializer_list<int64_t> want_shape, const std::vector<double>& want) {
  EXPECT_EQ(t.shape(), shape(want_shape)) << t.to_string();
  EXPECT_EQ(values(t), want) << t.to_string();
}

/** Equal element by element within tol; NaN matches NaN and infinities match exactly. */
inline void expect_values(const Tensor& t, const std::vector<double>& want, double tol) {
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size()) << t.to_string();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << t.to_string();
    else if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << "at " << i;
    else EXPECT_NEAR(got[i], want[i], tol) << "at " << i << ": " << t.to_string();
  }
}

/** Small integers in [-4, 4] as bfloat16, `step` apart modulo 9: every float32 sum of their
 *  products is exact, so a bfloat16 product or convolution must equal the exact result rounded
 *  once, whichever kernel runs. */
inline Tensor small_ints(std::initializer_list<int64_t> dims, int64_t step) {
  Shape d(dims);
  return (arange(numel_of(d), {.dtype = float32}).mul(static_cast<double>(step)) % 9.0)
      .sub(4.0)
      .reshape(Dims(dims))
      .to(bfloat16);
}

}  // namespace ug::test
