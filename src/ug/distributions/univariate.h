// Continuous distributions over the reals with elementwise parameters: Normal, Uniform,
// Exponential and Laplace (torch.distributions' formulas).
#pragma once

#include <cmath>
#include <limits>

#include "ug/distributions/distribution.h"
#include "ug/ops/binary.h"

namespace ug::distributions {

/** A location-scale family over the reals (Normal, Laplace): loc and scale broadcast to the
 *  batch shape, scale positive. */
class LocScale : public Distribution {
 public:
  Constraint support() const override { return constraints::real(); }
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  const Tensor& loc() const { return loc_; }
  const Tensor& scale() const { return scale_; }

 protected:
  LocScale(const Tensor& loc, const Tensor& scale, bool validate_args);
  /** The parameters' checks: called by the derived class's constructor, whose name() they print. */
  void check_loc_scale() const;
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"loc", loc_}, {"scale", scale_}}; }

  Tensor loc_, scale_;
};

class Normal : public LocScale {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Normal>(p[0], p[1], validate_args_);
  }
  Normal(const Tensor& loc, const Tensor& scale, bool validate_args = true) : LocScale(loc, scale, validate_args) {
    check_loc_scale();
  }
  std::string name() const override { return "Normal"; }
  bool has_rsample() const override { return true; }
  /** loc + scale * eps, eps = ug::randn of the extended shape (the global generator). */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor variance() const override { return scale_.square(); }
  Tensor stddev() const override { return scale_; }
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
};

class Uniform : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Uniform>(p[0], p[1], validate_args_);
  }
  Uniform(const Tensor& low, const Tensor& high, bool validate_args = true);
  std::string name() const override { return "Uniform"; }
  bool has_rsample() const override { return true; }
  /** low + u * (high - low), u = ug::rand of the extended shape. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return (high_ - low_).log(); }
  Tensor mean() const override { return (high_ + low_) / 2; }
  Tensor variance() const override { return (high_ - low_).square() / 12; }
  Tensor stddev() const override { return (high_ - low_) / std::sqrt(12.0); }
  /** NaN: every point is as likely (torch's). */
  Tensor mode() const override { return high_ * std::numeric_limits<double>::quiet_NaN(); }
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::interval(low_, high_); }
  const Tensor& low() const { return low_; }
  const Tensor& high() const { return high_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"low", low_}, {"high", high_}}; }

 private:
  Tensor low_, high_;
};

class Exponential : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Exponential>(p[0], validate_args_);
  }
  explicit Exponential(const Tensor& rate, bool validate_args = true);
  std::string name() const override { return "Exponential"; }
  bool has_rsample() const override { return true; }
  /** e / rate, e drawn by ug::exponential_ (rate 1). */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return 1 - rate_.log(); }
  Tensor mean() const override { return rate_.reciprocal(); }
  Tensor variance() const override { return rate_.square().reciprocal(); }
  Tensor stddev() const override { return rate_.reciprocal(); }
  Tensor mode() const override { return zeros_like(rate_); }
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::nonnegative(); }
  const Tensor& rate() const { return rate_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"rate", rate_}}; }

 private:
  Tensor rate_;
};

class Laplace : public LocScale {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Laplace>(p[0], p[1], validate_args_);
  }
  Laplace(const Tensor& loc, const Tensor& scale, bool validate_args = true) : LocScale(loc, scale, validate_args) {
    check_loc_scale();
  }
  std::string name() const override { return "Laplace"; }
  bool has_rsample() const override { return true; }
  /** loc - scale * sign(u) * log1p(-|u|), u uniform in (eps - 1, 1). */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return 1 + (2 * scale_).log(); }
  Tensor variance() const override { return 2 * scale_.square(); }
  Tensor stddev() const override { return std::sqrt(2.0) * scale_; }
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
};

/** Student's t with df degrees of freedom, shifted by loc and scaled by scale. */
class StudentT : public LocScale {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<StudentT>(p[0], p[1], p[2], validate_args_);
  }
  StudentT(const Tensor& df, const Tensor& loc, const Tensor& scale, bool validate_args = true);
  std::string name() const override { return "StudentT"; }
  bool has_rsample() const override { return true; }
  /** loc + scale * random::t(df): differentiable in df through its Gamma draw too. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  /** loc, NaN where df <= 1. */
  Tensor mean() const override;
  /** scale^2 df / (df - 2), inf where 1 < df <= 2, NaN where df <= 1. */
  Tensor variance() const override;
  const Tensor& df() const { return df_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"df", df_}, {"loc", loc_}, {"scale", scale_}};
  }

 private:
  Tensor df_;
};

}  // namespace ug::distributions
