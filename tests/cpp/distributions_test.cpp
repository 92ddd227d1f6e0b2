// ug::distributions in C++: Normal and Categorical against their closed forms, the
// reparameterised draw redrawn from the same seed, and the argument checks.
#include "ug/distributions/distributions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "ug/ug.h"

namespace d = ug::distributions;
using ug::Tensor;

namespace {
const ug::Options f64{.dtype = ug::float64};
}  // namespace

TEST(Distributions, Normal) {
  Tensor loc = ug::tensor({0.5, -1.0}, f64).requires_grad_(), scale = ug::tensor({2.0, 0.5}, f64).requires_grad_();
  d::Normal n(loc, scale);
  EXPECT_EQ(n.batch_shape(), (ug::Dims{2}));
  EXPECT_TRUE(n.event_shape().empty());
  // log N(x; m, s) = -(x - m)^2 / (2 s^2) - log s - log sqrt(2 pi)
  Tensor lp = n.log_prob(ug::tensor({1.5, -1.0}, f64));
  const double c = std::log(std::sqrt(2 * std::numbers::pi));
  EXPECT_NEAR(lp[0].item<double>(), -1.0 / 8 - std::log(2.0) - c, 1e-12);
  EXPECT_NEAR(lp[1].item<double>(), -std::log(0.5) - c, 1e-12);
  EXPECT_NEAR(n.entropy()[0].item<double>(), 0.5 + c + std::log(2.0), 1e-12);
  EXPECT_NEAR(n.cdf(ug::tensor({0.5, 0.0}, f64))[0].item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(n.icdf(ug::tensor({0.5, 0.5}, f64))[1].item<double>(), -1.0, 1e-12);
  // rsample = loc + scale * eps, eps the global generator's randn.
  ug::manual_seed(4);
  Tensor x = n.rsample({3});
  ug::manual_seed(4);
  Tensor eps = ug::randn({3, 2}, f64);
  EXPECT_TRUE(ug::allclose(x, loc + eps * scale, 0, 1e-14));
  x.sum().backward();
  EXPECT_TRUE(ug::allclose(scale.grad(), eps.sum({0}), 0, 1e-14));
  EXPECT_FALSE(n.sample({3}).requires_grad());
  EXPECT_THROW(d::Normal(ug::scalar_tensor(0.0), ug::scalar_tensor(-1.0)), ug::ValueError);
  EXPECT_THROW(n.log_prob(ug::zeros({3}, f64)), ug::ValueError);  // not broadcastable with [2]
}

TEST(Distributions, Categorical) {
  Tensor probs = ug::tensor({{1.0, 1.0, 2.0}, {0.0, 3.0, 1.0}}, f64);
  d::Categorical c(probs);  // normalised over the last dim
  EXPECT_EQ(c.batch_shape(), (ug::Dims{2}));
  Tensor lp = c.log_prob(ug::tensor({2, 1}, {.dtype = ug::int64}));
  EXPECT_NEAR(lp[0].item<double>(), std::log(0.5), 1e-12);
  EXPECT_NEAR(lp[1].item<double>(), std::log(0.75), 1e-12);
  EXPECT_NEAR(c.entropy()[1].item<double>(), -(0.75 * std::log(0.75) + 0.25 * std::log(0.25)), 1e-12);
  d::Categorical same(std::nullopt, probs.log());  // the same from logits
  EXPECT_TRUE(ug::allclose(same.probs(), c.probs(), 0, 1e-14));
  EXPECT_NEAR(d::kl_divergence(c, same).abs().max().item<double>(), 0.0, 1e-12);
  ug::manual_seed(1);
  Tensor s = c.sample({1000});
  EXPECT_EQ(s.shape(), (ug::Dims{1000, 2}));
  EXPECT_EQ(s.select(1, 1).eq(0).sum().item<int64_t>(), 0);  // probability 0 never drawn
  EXPECT_THROW(c.log_prob(ug::tensor({3, 0}, {.dtype = ug::int64})), ug::ValueError);
  EXPECT_THROW(d::Categorical(probs, probs), ug::ValueError);
  EXPECT_THROW(d::kl_divergence(c, d::Normal(ug::zeros({2}), ug::ones({2}))), ug::NotImplementedError);
}

TEST(Distributions, GammaReparameterisedGradient) {
  // dx/da of Gamma(a) draws is -(dP/da) / (dP/dx), P = igamma: dP/da by central differences.
  Tensor a = ug::tensor({0.05, 0.5, 1.0, 4.0, 60.0, 800.0}, f64);
  Tensor x = ug::random::gamma(ug::random::key(1), a, ug::Dims{50, 6}, ug::float64);
  Tensor g = ug::random::gamma_grad(a, x);
  Tensor h = a * 1e-5;
  Tensor dp_da = (ug::igamma(a + h, x) - ug::igamma(a - h, x)) / (2 * h);
  Tensor dp_dx = ((a - 1) * x.log() - x - ug::lgamma(a)).exp();
  Tensor expected = -dp_da / dp_dx;
  Tensor inside = x.gt(1e-200);  // where the density is representable
  EXPECT_TRUE(ug::allclose(ug::where(inside, g, 0.0), ug::where(inside, expected, 0.0), 1e-6, 1e-300));
  // Gamma.rsample differentiates through it: x = draw / rate.
  Tensor c = ug::tensor({0.7, 3.0}, f64).requires_grad_(), rate = ug::tensor({2.0, 0.5}, f64);
  ug::manual_seed(2);
  Tensor y = d::Gamma(c, rate).rsample({4});
  y.sum().backward();
  Tensor draw = y.detach() * rate;
  EXPECT_TRUE(ug::allclose(c.grad(), (ug::random::gamma_grad(c.detach(), draw) / rate).sum({0}), 1e-12, 0));
}

TEST(Distributions, HeavyTailsCountsAndTransformsInClosedForm) {
  const double pi = std::numbers::pi;
  d::Cauchy cauchy(ug::zeros({1}, f64), ug::full({1}, 2.0, f64));
  Tensor two = ug::full({1}, 2.0, f64);
  // density 1 / (pi s (1 + (x / s)^2)) and cdf atan(x / s) / pi + 1/2 at x = s
  EXPECT_NEAR(cauchy.log_prob(two).item<double>(), -std::log(pi * 2 * 2), 1e-12);
  EXPECT_NEAR(cauchy.cdf(two).item<double>(), 0.75, 1e-12);
  EXPECT_TRUE(std::isnan(cauchy.mean().item<double>()));
  EXPECT_TRUE(std::isinf(cauchy.variance().item<double>()));
  d::Pareto pareto(ug::ones({1}, f64), ug::full({1}, 3.0, f64));
  EXPECT_NEAR(pareto.cdf(two).item<double>(), 1 - 1.0 / 8, 1e-12);
  EXPECT_NEAR(pareto.mean().item<double>(), 1.5, 1e-12);
  EXPECT_THROW(pareto.log_prob(ug::full({1}, 0.5, f64)), ug::ValueError);  // below the scale
  d::Geometric geometric(ug::full({1}, 0.25, f64));
  EXPECT_NEAR(geometric.log_prob(two).item<double>(), 2 * std::log(0.75) + std::log(0.25), 1e-12);
  EXPECT_THROW(d::Geometric(ug::zeros({1}, f64)), ug::ValueError);
  // Stick breaking sends 0 to the simplex's centre; a base's last batch dim becomes the event dim.
  d::StickBreakingTransform stick;
  EXPECT_TRUE(ug::allclose(stick.forward(ug::zeros({2}, f64)), ug::full({3}, 1.0 / 3, f64), 0, 1e-15));
  d::TransformedDistribution simplex(std::make_shared<d::Normal>(ug::zeros({4, 2}, f64), ug::ones({2}, f64)),
                                     {std::make_shared<d::StickBreakingTransform>()});
  EXPECT_EQ(simplex.batch_shape(), (ug::Dims{4}));
  EXPECT_EQ(simplex.event_shape(), (ug::Dims{3}));
  EXPECT_EQ(simplex.log_prob(ug::full({4, 3}, 1.0 / 3, f64)).shape(), (ug::Dims{4}));
  EXPECT_THROW(d::AbsTransform().sign(), ug::NotImplementedError);
}

TEST(Distributions, NewFamiliesInClosedForm) {
  // InverseGamma(c, r) at x: c log r - lgamma(c) - (c + 1) log x - r / x; mean r / (c - 1)
  d::InverseGamma ig(ug::scalar_tensor(3.0, f64), ug::scalar_tensor(2.0, f64));
  EXPECT_NEAR(ig.log_prob(ug::scalar_tensor(0.5, f64)).item<double>(),
              3 * std::log(2.0) - std::lgamma(3.0) - 4 * std::log(0.5) - 4, 1e-12);
  EXPECT_NEAR(ig.mean().item<double>(), 1.0, 1e-12);
  // GeneralizedPareto with concentration 0 is the shifted Exponential
  d::GeneralizedPareto gp(ug::scalar_tensor(1.0, f64), ug::scalar_tensor(2.0, f64), ug::scalar_tensor(0.0, f64));
  EXPECT_NEAR(gp.cdf(ug::scalar_tensor(3.0, f64)).item<double>(), 1 - std::exp(-1.0), 1e-12);
  // ContinuousBernoulli(1/2) is Uniform(0, 1)
  d::ContinuousBernoulli cb(ug::scalar_tensor(0.5, f64));
  EXPECT_NEAR(cb.log_prob(ug::scalar_tensor(0.3, f64)).item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(cb.mean().item<double>(), 0.5, 1e-12);
  // LKJCholesky(2, 1): r uniform on (-1, 1), density 1/2 in L21
  d::LKJCholesky lkj(2, ug::scalar_tensor(1.0, f64));
  Tensor L = ug::tensor({{1.0, 0.0}, {0.6, 0.8}}, f64);
  EXPECT_NEAR(lkj.log_prob(L).item<double>(), std::log(0.5), 1e-12);
  // Wishart(df, I) in one dim is Chi2(df)
  d::Wishart w(ug::scalar_tensor(3.0, f64), ug::eye(1, std::nullopt, f64));
  d::Chi2 chi2(ug::scalar_tensor(3.0, f64));
  EXPECT_NEAR(w.log_prob(ug::full({1, 1}, 2.0, f64)).item<double>(),
              chi2.log_prob(ug::scalar_tensor(2.0, f64)).item<double>(), 1e-12);
  EXPECT_THROW(d::LKJCholesky(1, ug::scalar_tensor(1.0, f64)), ug::ValueError);
}

TEST(Distributions, BijectToAndCrossFamilyKl) {
  // biject_to(interval(1, 3)) is sigmoid then 1 + 2 y; transform_to(simplex) is softmax
  auto t = d::biject_to(d::constraints::interval(ug::scalar_tensor(1.0, f64), ug::scalar_tensor(3.0, f64)));
  EXPECT_NEAR(t->forward(ug::scalar_tensor(0.0, f64)).item<double>(), 2.0, 1e-12);
  EXPECT_EQ(d::transform_to(d::constraints::simplex())->repr(), "SoftmaxTransform()");
  EXPECT_THROW(d::biject_to(d::constraints::lower_cholesky()), ug::NotImplementedError);
  // KL(Exponential(1) || Normal(0, 1)) = -H + 0.5 log(2 pi) + E[x^2] / 2 = -1 + 0.5 log(2 pi) + 1
  d::Exponential e(ug::scalar_tensor(1.0, f64));
  d::Normal n(ug::scalar_tensor(0.0, f64), ug::scalar_tensor(1.0, f64));
  EXPECT_NEAR(d::kl_divergence(e, n).item<double>(), 0.5 * std::log(2 * std::numbers::pi), 1e-12);
  EXPECT_TRUE(std::isinf(d::kl_divergence(n, e).item<double>()));
  d::CorrCholeskyTransform corr;
  Tensor x = ug::tensor({0.3, -1.2, 0.5}, f64);
  EXPECT_TRUE(ug::allclose(corr.inverse(corr.forward(x)), x, 0, 1e-12));
}
