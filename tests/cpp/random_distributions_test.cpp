// jax.random's distributions in C++: the same draws for the same key, and the moments a
// distribution must have (5 standard errors over 100k draws; Python checks each against
// SciPy's distribution function).
#include "ug/ops/random_distributions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <utility>

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

namespace {

Tensor f64(double x) { return ug::scalar_tensor(x, {.dtype = ug::float64}); }

/** Expects x's mean within 5 standard errors of `mean`, for a distribution of variance `var`. */
void expect_mean(const Tensor& x, double mean, double var) {
  EXPECT_NEAR(x.to(ug::float64).mean().item<double>(), mean, 5 * std::sqrt(var / double(x.numel())));
}

}  // namespace

TEST(RandomDistributions, CountsAndContinuousFamilies) {
  const Tensor key = ug::random::key(5);
  constexpr int64_t n = 100000;
  const ug::Dims shape{n};
  for (double lam : {4.0, 50.0}) {  // inversion and PTRS
    Tensor x = ug::random::poisson(key, f64(lam), shape);
    EXPECT_EQ(x.dtype(), ug::int32);
    expect_mean(x, lam, lam);
    EXPECT_TRUE(ug::equal(x, ug::random::poisson(key, f64(lam), shape)));
  }
  for (auto [trials, p] : {std::pair{20.0, 0.1}, std::pair{200.0, 0.7}}) {  // inversion and BTRS (for 1 - p)
    Tensor x = ug::random::binomial(key, f64(trials), f64(p), shape, ug::float64);
    expect_mean(x, trials * p, trials * p * (1 - p));
    EXPECT_LE(x.max().item<double>(), trials);
  }
  Tensor g = ug::random::geometric(key, f64(0.25), shape);
  EXPECT_EQ(g.min().item<int32_t>(), 1);
  expect_mean(g, 4.0, 12.0);                                                   // 1 / p and (1 - p) / p^2
  expect_mean(ug::random::wald(key, f64(2.0), shape, ug::float64), 2.0, 8.0);  // variance mean^3
  expect_mean(ug::random::rayleigh(key, f64(1.0), shape, ug::float64), std::sqrt(std::numbers::pi / 2),
              2 - std::numbers::pi / 2);
  expect_mean(ug::random::maxwell(key, shape, ug::float64), 2 * std::sqrt(2 / std::numbers::pi),
              3 - 8 / std::numbers::pi);
  expect_mean(ug::random::triangular(key, f64(0.0), f64(1.0), f64(4.0), shape, ug::float64), 5.0 / 3,
              (16.0 + 1 - 4) / 18);
  Tensor b = ug::random::ball(key, 3, 2, {1000}, ug::float64);
  EXPECT_EQ(b.shape(), (ug::Shape{1000, 3}));
  EXPECT_LT(b.square().sum(ug::Dims{-1}).max().item<double>(), 1.0);
  EXPECT_THROW(ug::random::poisson(key, f64(-1.0)), ug::ValueError);
  EXPECT_THROW(ug::random::binomial(key, f64(3.0), f64(1.5)), ug::ValueError);
  EXPECT_THROW(ug::random::geometric(key, f64(0.0)), ug::ValueError);
  EXPECT_THROW(ug::random::poisson(key, ug::ones({3}), ug::Dims{2}), ug::ValueError);
}

TEST(RandomDistributions, TorchSpellingsDrawFromTheGlobalGenerator) {
  constexpr int64_t n = 100000;
  ug::manual_seed(9);
  Tensor x = ug::poisson(ug::full({n}, 3.0));
  EXPECT_EQ(x.dtype(), ug::float32);
  expect_mean(x, 3.0, 3.0);
  ug::manual_seed(9);
  EXPECT_TRUE(ug::equal(ug::poisson(ug::full({n}, 3.0)), x));
  expect_mean(ug::binomial(ug::full({n}, 10.0), ug::full({n}, 0.5)), 5.0, 2.5);
  Tensor t = ug::empty({n}, {.dtype = ug::float64});
  expect_mean(ug::geometric_(t, 0.5), 2.0, 2.0);
  expect_mean(ug::log_normal_(t, 0.5, 0.25).log(), 0.5, 0.0625);
  // Cauchy has no mean: its sample median, of standard error pi sigma / (2 sqrt(n)).
  EXPECT_NEAR(ug::median(ug::cauchy_(t, 1.0, 2.0)).item<double>(), 1.0, 5 * std::numbers::pi / std::sqrt(double(n)));
  EXPECT_THROW(ug::poisson(ug::full({2}, -1.0)), ug::ValueError);
  Tensor ints = ug::zeros({2}, {.dtype = ug::int64});
  EXPECT_THROW(ug::cauchy_(ints, 0, 1), ug::TypeError);
}

TEST(RandomKeys, FoldInTensorDataUnderJitAndVmap) {
  // fold_in with a 0-d integer tensor gives the int's key: a program folds in each run's data,
  // and vmap folds each example's data into its key without mapping example by example.
  using Tensors = std::vector<Tensor>;
  const Tensor key = ug::random::key(3);
  auto by_int = [&](int64_t d) { return ug::random::fold_in(key, static_cast<uint64_t>(d)); };
  EXPECT_TRUE(ug::equal(ug::random::fold_in(key, ug::scalar_tensor(int64_t{7})), by_int(7)));
  ug::JitFunction folded = ug::jit([](const Tensors& a) { return Tensors{ug::random::fold_in(a[0], a[1])}; });
  for (int64_t d : {0, 5, -2}) EXPECT_TRUE(ug::equal(folded({key, ug::scalar_tensor(d)})[0], by_int(d)));
  const int64_t before = ug::vmap_fallbacks();
  Tensor keys = ug::vmap([&key](const Tensors& a) { return Tensors{ug::random::fold_in(key, a[0])}; },
                         {ug::arange(0, 4, 1, {.dtype = ug::int32})}, {0}, {})[0];
  EXPECT_EQ(ug::vmap_fallbacks(), before);
  ASSERT_EQ(keys.shape(), (ug::Shape{4, 2}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(ug::equal(keys.select(0, i), by_int(i)));
  EXPECT_THROW(ug::random::fold_in(key, ug::scalar_tensor(1.5)), ug::TypeError);
}
