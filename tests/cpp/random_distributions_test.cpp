// jax.random's distributions in C++: the same draws for the same key, and the moments a
// distribution must have (5 standard errors over 100k draws; Python checks each against
// SciPy's distribution function).
#include "ug/ops/random_distributions.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ug/ug.h"

using ug::Tensor;

TEST(RandomDistributions, MomentsAndKeys) {
  const Tensor key = ug::random::key(3);
  constexpr int64_t n = 100000;
  Tensor e = ug::random::exponential(key, {n}, ug::float64);
  EXPECT_NEAR(e.mean().item<double>(), 1.0, 5 / std::sqrt(double(n)));  // mean 1, variance 1
  EXPECT_TRUE(ug::equal(e, ug::random::exponential(key, {n}, ug::float64)));
  Tensor t = ug::random::truncated_normal(key, 0.0, 1.0, {n}, ug::float64);
  EXPECT_GT(t.min().item<double>(), 0.0);
  EXPECT_LT(t.max().item<double>(), 1.0);
  Tensor q = ug::random::orthogonal(key, 3, {}, ug::float64);
  EXPECT_TRUE(ug::allclose(q.matmul(q.t()), ug::eye(3, std::nullopt, {.dtype = ug::float64}), 0, 1e-12));
  Tensor picked = ug::random::choice(key, 10, {10}, false);
  EXPECT_TRUE(ug::equal(picked.sort().first, ug::arange(0, 10, 1, {.dtype = ug::int64})));
  EXPECT_THROW(ug::random::choice(key, 3, {4}, false), ug::ValueError);
  EXPECT_THROW(ug::random::exponential(key, {2}, ug::int32), ug::TypeError);
  // Gamma(a): mean a and variance a, below 1 (boosted) and above.
  for (double a : {0.4, 3.0}) {
    Tensor g = ug::random::gamma(key, ug::scalar_tensor(a, {.dtype = ug::float64}), ug::Dims{n}, ug::float64);
    EXPECT_NEAR(g.mean().item<double>(), a, 5 * std::sqrt(a / n));
  }
  EXPECT_THROW(ug::random::gamma(key, ug::scalar_tensor(-1.0)), ug::ValueError);
}
