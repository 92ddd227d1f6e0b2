#include "ug/distributions/univariate.h"

#include <limits>
#include <numbers>

#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/random.h"
#include "ug/ops/random_distributions.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

// ---- LocScale ----------------------------------------------------------------------------

LocScale::LocScale(const Tensor& loc, const Tensor& scale, bool validate_args) : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({loc, scale});
  loc_ = b[0], scale_ = b[1];
  batch_shape_ = loc_.shape();
}

void LocScale::check_loc_scale() const {
  check_param("loc", loc_, constraints::real());
  check_param("scale", scale_, constraints::positive());
}

// ---- Normal ------------------------------------------------------------------------------

Tensor Normal::rsample(const Dims& sample_shape) const {
  return loc_ + randn(extended_shape(sample_shape), like(loc_)) * scale_;
}

Tensor Normal::log_prob(const Tensor& value) const {
  validate_sample(value);
  return -(value - loc_).square() / (2 * scale_.square()) - scale_.log() - std::log(std::sqrt(2 * std::numbers::pi));
}

Tensor Normal::entropy() const { return 0.5 + 0.5 * std::log(2 * std::numbers::pi) + scale_.log(); }

Tensor Normal::cdf(const Tensor& value) const {
  validate_sample(value);
  return 0.5 * (1 + ((value - loc_) * scale_.reciprocal() / std::sqrt(2.0)).erf());
}

Tensor Normal::icdf(const Tensor& value) const { return loc_ + scale_ * erfinv(2 * value - 1) * std::sqrt(2.0); }

// ---- Uniform -----------------------------------------------------------------------------

Uniform::Uniform(const Tensor& low, const Tensor& high, bool validate_args) : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({low, high});
  low_ = b[0], high_ = b[1];
  batch_shape_ = low_.shape();
  check_param("low", low_, constraints::less_than(high_));
  check_param("high", high_, constraints::greater_than(low_));
}

Tensor Uniform::rsample(const Dims& sample_shape) const {
  return low_ + rand(extended_shape(sample_shape), like(low_)) * (high_ - low_);
}

Tensor Uniform::log_prob(const Tensor& value) const {
  validate_sample(value);
  Tensor inside = low_.le(value).to(low_.dtype()) * high_.gt(value).to(low_.dtype());
  return inside.log() - (high_ - low_).log();
}

Tensor Uniform::cdf(const Tensor& value) const {
  validate_sample(value);
  return ((value - low_) / (high_ - low_)).clamp(Scalar(0), Scalar(1));
}

Tensor Uniform::icdf(const Tensor& value) const { return value * (high_ - low_) + low_; }

// ---- Exponential -------------------------------------------------------------------------

Exponential::Exponential(const Tensor& rate, bool validate_args) : Distribution(rate.shape(), {}, validate_args) {
  rate_ = rate;
  check_param("rate", rate_, constraints::positive());
}

Tensor Exponential::rsample(const Dims& sample_shape) const {
  Tensor e = empty(extended_shape(sample_shape), like(rate_));
  exponential_(e);
  return e / rate_;
}

Tensor Exponential::log_prob(const Tensor& value) const {
  validate_sample(value);
  return rate_.log() - rate_ * value;
}

Tensor Exponential::cdf(const Tensor& value) const {
  validate_sample(value);
  return 1 - (-rate_ * value).exp();
}

Tensor Exponential::icdf(const Tensor& value) const { return -(-value).log1p() / rate_; }

// ---- Laplace -----------------------------------------------------------------------------

Tensor Laplace::rsample(const Dims& sample_shape) const {
  Tensor u = empty(extended_shape(sample_shape), like(loc_));
  uniform_(u, eps_of(loc_) - 1, 1);
  return loc_ - scale_ * u.sign() * (-u.abs()).log1p();
}

Tensor Laplace::log_prob(const Tensor& value) const {
  validate_sample(value);
  return -(2 * scale_).log() - (value - loc_).abs() / scale_;
}

Tensor Laplace::cdf(const Tensor& value) const {
  validate_sample(value);
  return 0.5 - 0.5 * (value - loc_).sign() * (-(value - loc_).abs() / scale_).expm1();
}

Tensor Laplace::icdf(const Tensor& value) const {
  Tensor term = value - 0.5;
  return loc_ - scale_ * term.sign() * (-2 * term.abs()).log1p();
}

// ---- StudentT ----------------------------------------------------------------------------

StudentT::StudentT(const Tensor& df, const Tensor& loc, const Tensor& scale, bool validate_args)
    : LocScale(loc, scale, validate_args) {
  auto b = broadcast_tensors({df, loc_, scale_});
  df_ = b[0], loc_ = b[1], scale_ = b[2];
  batch_shape_ = df_.shape();
  check_param("df", df_, constraints::positive());
  check_loc_scale();
}

Tensor StudentT::rsample(const Dims& sample_shape) const {
  return loc_ + scale_ * random::t(global_key(), df_, extended_shape(sample_shape), df_.dtype());
}

Tensor StudentT::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor y = (value - loc_) / scale_;
  const Tensor z =
      scale_.log() + 0.5 * df_.log() + 0.5 * std::log(std::numbers::pi) + lgamma(0.5 * df_) - lgamma(0.5 * (df_ + 1));
  return -0.5 * (df_ + 1) * (y.square() / df_).log1p() - z;
}

Tensor StudentT::entropy() const {
  const Tensor lbeta = lgamma(0.5 * df_) + std::lgamma(0.5) - lgamma(0.5 * (df_ + 1));
  return scale_.log() + 0.5 * (df_ + 1) * (digamma(0.5 * (df_ + 1)) - digamma(0.5 * df_)) + 0.5 * df_.log() + lbeta;
}

Tensor StudentT::mean() const { return where(df_.le(1), std::numeric_limits<double>::quiet_NaN(), loc_); }

Tensor StudentT::variance() const {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  return where(df_.le(1), nan, where(df_.le(2), inf, scale_.square() * df_ / (df_ - 2)));
}

}  // namespace ug::distributions
