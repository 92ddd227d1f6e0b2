#include "ug/distributions/gamma.h"

#include <limits>

#include "ug/autograd/special.h"
#include "ug/core/error.h"
#include "ug/ops/join.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/composite.h"
#include "ug/ops/random_distributions.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
/** The smallest normal number of t's dtype: torch keeps draws above it (their log stays finite). */
Scalar tiny(const Tensor& t) {
  return t.dtype() == DType::Float64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
}
}  // namespace

// ---- Gamma -------------------------------------------------------------------------------

Gamma::Gamma(const Tensor& concentration, const Tensor& rate, bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({concentration, rate});
  concentration_ = b[0], rate_ = b[1];
  batch_shape_ = concentration_.shape();
  check_param("concentration", concentration_, constraints::positive());
  check_param("rate", rate_, constraints::positive());
}

Tensor Gamma::rsample(const Dims& sample_shape) const {
  Tensor g = random::gamma(global_key(), concentration_, extended_shape(sample_shape), concentration_.dtype());
  return (g / rate_).clamp(tiny(g), std::nullopt);
}

Tensor Gamma::log_prob(const Tensor& value) const {
  validate_sample(value);
  return xlogy(concentration_, rate_) + xlogy(concentration_ - 1, value) - rate_ * value - lgamma(concentration_);
}

Tensor Gamma::entropy() const {
  const Tensor& c = concentration_;
  return c - rate_.log() + lgamma(c) + (1 - c) * digamma(c);
}

Tensor Gamma::mean() const { return concentration_ / rate_; }
Tensor Gamma::variance() const { return concentration_ / rate_.square(); }
Tensor Gamma::mode() const { return (concentration_ - 1).clamp(0, std::nullopt) / rate_; }

Tensor Gamma::cdf(const Tensor& value) const {
  validate_sample(value);
  return igamma(concentration_, rate_ * value);
}

Chi2::Chi2(const Tensor& df, bool validate_args) : Gamma(df * 0.5, full_like(df, 0.5), false) {
  // Checked here, not by Gamma's constructor, so that the error names Chi2 and df.
  validate_args_ = validate_args;
  check_param("df", df, constraints::positive());
}

// ---- Dirichlet ---------------------------------------------------------------------------

Dirichlet::Dirichlet(const Tensor& concentration, bool validate_args)
    : Distribution({}, {}, validate_args), concentration_(concentration) {
  if (concentration.dim() < 1)
    fail("[Dirichlet] concentration must have at least one dimension, got a tensor of shape ",
         shape_str(concentration.shape()));
  const Dims& s = concentration.shape();
  batch_shape_ = Dims(s.begin(), s.end() - 1);
  event_shape_ = {s.back()};
  check_param("concentration", concentration_, constraints::independent(constraints::positive(), 1));
}

Tensor Dirichlet::rsample(const Dims& sample_shape) const {
  const Tensor x =
      random::dirichlet(global_key(), concentration_, concat(sample_shape, batch_shape_), concentration_.dtype());
  const double eps = concentration_.dtype() == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                              : std::numeric_limits<float>::epsilon();
  return x.clamp(tiny(x), 1 - eps);
}

Tensor Dirichlet::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor& c = concentration_;
  return xlogy(c - 1, value).sum({-1}) + lgamma(c.sum({-1})) - lgamma(c).sum({-1});
}

Tensor Dirichlet::entropy() const {
  const Tensor& c = concentration_;
  const Tensor total = c.sum({-1});
  const double k = static_cast<double>(c.size(-1));
  return lgamma(c).sum({-1}) - lgamma(total) - (k - total) * digamma(total) - ((c - 1) * digamma(c)).sum({-1});
}

Tensor Dirichlet::mean() const { return concentration_ / concentration_.sum({-1}, true); }

Tensor Dirichlet::variance() const {
  const Tensor total = concentration_.sum({-1}, true);
  return concentration_ * (total - concentration_) / (total.square() * (total + 1));
}

Tensor Dirichlet::mode() const {
  const Tensor above = (concentration_ - 1).clamp(0, std::nullopt);
  const Tensor all_below = concentration_.lt(1).all(-1, true);
  const Tensor first = index_fill(zeros_like(above), -1, zeros({1}, {.dtype = DType::Int64}), 1.0);
  return where(all_below, first, above / above.sum({-1}, true));
}

// ---- Beta --------------------------------------------------------------------------------

namespace {
Tensor stacked(const Tensor& c1, const Tensor& c0) {
  const auto b = broadcast_tensors({c1, c0});
  return stack({b[0], b[1]}, -1);
}
}  // namespace

Beta::Beta(const Tensor& concentration1, const Tensor& concentration0, bool validate_args)
    : Distribution({}, {}, validate_args), dirichlet_(stacked(concentration1, concentration0), false) {
  auto b = broadcast_tensors({concentration1, concentration0});
  c1_ = b[0], c0_ = b[1];
  batch_shape_ = c1_.shape();
  check_param("concentration1", c1_, constraints::positive());
  check_param("concentration0", c0_, constraints::positive());
}

Tensor Beta::rsample(const Dims& sample_shape) const {
  return random::beta(global_key(), c1_, c0_, extended_shape(sample_shape), c1_.dtype());
}

Tensor Beta::log_prob(const Tensor& value) const {
  validate_sample(value);
  return xlogy(c1_ - 1, value) + xlogy(c0_ - 1, 1 - value) + lgamma(c1_ + c0_) - lgamma(c1_) - lgamma(c0_);
}

Tensor Beta::entropy() const {
  Tensor total = c1_ + c0_;
  return lgamma(c1_) + lgamma(c0_) - lgamma(total) + (total - 2) * digamma(total) - (c1_ - 1) * digamma(c1_) -
         (c0_ - 1) * digamma(c0_);
}

Tensor Beta::mean() const { return c1_ / (c1_ + c0_); }
Tensor Beta::variance() const {
  Tensor total = c1_ + c0_;
  return c1_ * c0_ / (total.square() * (total + 1));
}

// ---- FisherSnedecor ----------------------------------------------------------------------

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

FisherSnedecor::FisherSnedecor(const Tensor& df1, const Tensor& df2, bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({df1, df2});
  df1_ = b[0], df2_ = b[1];
  batch_shape_ = df1_.shape();
  check_param("df1", df1_, constraints::positive());
  check_param("df2", df2_, constraints::positive());
}

Tensor FisherSnedecor::rsample(const Dims& sample_shape) const {
  const Dims shape = extended_shape(sample_shape);
  const Tensor x1 = random::gamma(global_key(), df1_ * 0.5, shape, df1_.dtype()) / df1_;
  const Tensor x2 = random::gamma(global_key(), df2_ * 0.5, shape, df2_.dtype()) / df2_;
  return (x1 / x2.clamp(tiny(x2), std::nullopt)).clamp(tiny(x2), std::nullopt);
}

Tensor FisherSnedecor::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor c1 = df1_ * 0.5, c2 = df2_ * 0.5, ratio = df1_ / df2_;
  return lgamma(c1 + c2) - lgamma(c1) - lgamma(c2) + c1 * ratio.log() + (c1 - 1) * value.log() -
         (c1 + c2) * (ratio * value).log1p();
}

Tensor FisherSnedecor::mean() const { return where(df2_.le(2), kNaN, df2_ / (df2_ - 2)); }

Tensor FisherSnedecor::variance() const {
  const Tensor v = 2 * df2_.square() * (df1_ + df2_ - 2) / (df1_ * (df2_ - 2).square() * (df2_ - 4));
  return where(df2_.le(4), kNaN, v);
}

Tensor FisherSnedecor::mode() const { return where(df1_.le(2), kNaN, (df1_ - 2) / df1_ * df2_ / (df2_ + 2)); }

// ---- InverseGamma ------------------------------------------------------------------------

InverseGamma::InverseGamma(const Tensor& concentration, const Tensor& rate, bool validate_args)
    : TransformedDistribution(std::make_shared<Gamma>(concentration, rate, validate_args),
                              {std::make_shared<PowerTransform>(-ones({}, like(rate)))}, validate_args) {}

Tensor InverseGamma::entropy() const {
  const Tensor& c = concentration();
  return c + rate().log() + lgamma(c) - (1 + c) * digamma(c);
}

Tensor InverseGamma::mean() const {
  return where(concentration().gt(1), rate() / (concentration() - 1), std::numeric_limits<double>::infinity());
}

Tensor InverseGamma::variance() const {
  const Tensor& c = concentration();
  return where(c.gt(2), rate().square() / ((c - 1).square() * (c - 2)), std::numeric_limits<double>::infinity());
}

}  // namespace ug::distributions
