// More continuous distributions with elementwise parameters: Cauchy, HalfCauchy, HalfNormal,
// Gumbel, Weibull, Pareto, GeneralizedPareto, Kumaraswamy, VonMises and ContinuousBernoulli
// (torch.distributions' formulas). torch builds
// several of them as TransformedDistributions; here each is written out, its log_prob, cdf and
// icdf in closed form, with the same values and conventions (inf or NaN moments).
#pragma once

#include <cmath>
#include <numbers>

#include "ug/distributions/discrete.h"
#include "ug/distributions/distribution.h"
#include "ug/distributions/univariate.h"

namespace ug::distributions {

class Cauchy : public LocScale {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Cauchy>(p[0], p[1], validate_args_);
  }
  Cauchy(const Tensor& loc, const Tensor& scale, bool validate_args = true) : LocScale(loc, scale, validate_args) {
    check_loc_scale();
  }
  std::string name() const override { return "Cauchy"; }
  bool has_rsample() const override { return true; }
  /** loc + scale * eps, eps drawn by ug::cauchy_. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  /** NaN: the mean does not exist (torch's). */
  Tensor mean() const override;
  /** inf (torch's). */
  Tensor variance() const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
};

/** |X| for X ~ Cauchy(0, scale). */
class HalfCauchy : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<HalfCauchy>(p[0], validate_args_);
  }
  explicit HalfCauchy(const Tensor& scale, bool validate_args = true);
  std::string name() const override { return "HalfCauchy"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override { return base_.rsample(sample_shape).abs(); }
  /** The Cauchy's doubled, -inf below 0. */
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return base_.entropy() - std::log(2.0); }
  /** inf, as the variance (torch's). */
  Tensor mean() const override;
  Tensor variance() const override { return base_.variance(); }
  Tensor mode() const override { return zeros_like(scale()); }
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override { return base_.icdf((value + 1) / 2); }
  Constraint support() const override { return constraints::nonnegative(); }
  const Tensor& scale() const { return base_.scale(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"scale", scale()}}; }

 private:
  Cauchy base_;
};

/** |X| for X ~ Normal(0, scale). */
class HalfNormal : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<HalfNormal>(p[0], validate_args_);
  }
  explicit HalfNormal(const Tensor& scale, bool validate_args = true);
  std::string name() const override { return "HalfNormal"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override { return base_.rsample(sample_shape).abs(); }
  /** The Normal's doubled, -inf below 0. */
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return base_.entropy() - std::log(2.0); }
  Tensor mean() const override { return scale() * std::sqrt(2 / std::numbers::pi); }
  Tensor variance() const override { return scale().square() * (1 - 2 / std::numbers::pi); }
  Tensor mode() const override { return zeros_like(scale()); }
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override { return base_.icdf((value + 1) / 2); }
  Constraint support() const override { return constraints::nonnegative(); }
  const Tensor& scale() const { return base_.scale(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"scale", scale()}}; }

 private:
  Normal base_;
};

/** The maximum's extreme value distribution: loc - scale log(-log U). */
class Gumbel : public LocScale {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Gumbel>(p[0], p[1], validate_args_);
  }
  Gumbel(const Tensor& loc, const Tensor& scale, bool validate_args = true) : LocScale(loc, scale, validate_args) {
    check_loc_scale();
  }
  std::string name() const override { return "Gumbel"; }
  bool has_rsample() const override { return true; }
  /** loc - scale log(-log u), u uniform in [tiny, 1 - eps) (torch's base Uniform). */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  /** loc + scale * Euler's constant. */
  Tensor mean() const override;
  Tensor variance() const override { return stddev().square(); }
  Tensor stddev() const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
};

/** Weibull(scale, concentration): scale * E^(1 / concentration), E ~ Exponential(1). */
class Weibull : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Weibull>(p[0], p[1], validate_args_);
  }
  Weibull(const Tensor& scale, const Tensor& concentration, bool validate_args = true);
  std::string name() const override { return "Weibull"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
  /** scale ((k - 1) / k)^(1 / k): NaN where k < 1, as torch's. */
  Tensor mode() const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::positive(); }
  const Tensor& scale() const { return scale_; }
  const Tensor& concentration() const { return concentration_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"scale", scale_}, {"concentration", concentration_}};
  }

 private:
  Tensor scale_, concentration_;
};

/** Pareto(scale, alpha): scale * exp(E / alpha), E ~ Exponential(1); support [scale, inf). */
class Pareto : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Pareto>(p[0], p[1], validate_args_);
  }
  Pareto(const Tensor& scale, const Tensor& alpha, bool validate_args = true);
  std::string name() const override { return "Pareto"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  /** inf where alpha <= 1. */
  Tensor mean() const override;
  /** inf where alpha <= 2. */
  Tensor variance() const override;
  Tensor mode() const override { return scale_; }
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::greater_than_eq(scale_); }
  const Tensor& scale() const { return scale_; }
  const Tensor& alpha() const { return alpha_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"scale", scale_}, {"alpha", alpha_}}; }

 private:
  Tensor scale_, alpha_;
};

/** Kumaraswamy(a, b) on [0, 1]: density a b x^(a-1) (1 - x^a)^(b-1); (1 - U^(1/b))^(1/a). */
class Kumaraswamy : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Kumaraswamy>(p[0], p[1], validate_args_);
  }
  Kumaraswamy(const Tensor& concentration1, const Tensor& concentration0, bool validate_args = true);
  std::string name() const override { return "Kumaraswamy"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return moment(1); }
  Tensor variance() const override { return moment(2) - mean().square(); }
  /** ((a - 1) / (a b - 1))^(1 / a), NaN where a < 1 or b < 1. */
  Tensor mode() const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::unit_interval(); }
  const Tensor& concentration1() const { return c1_; }
  const Tensor& concentration0() const { return c0_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"concentration1", c1_}, {"concentration0", c0_}};
  }

 private:
  /** E[X^n] = b B(1 + n / a, b). */
  Tensor moment(int n) const;
  Tensor c1_, c0_;
};

/** The circular von Mises distribution: density exp(k cos(x - loc)) / (2 pi I0(k)) on angles. */
class VonMises : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<VonMises>(p[0], p[1], validate_args_);
  }
  VonMises(const Tensor& loc, const Tensor& concentration, bool validate_args = true);
  std::string name() const override { return "VonMises"; }
  /** Best and Fisher's rejection sampler in float64 (torch's), drawing again where rejected;
   *  angles in [-pi, pi). */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  /** The circular mean and variance: loc and 1 - I1(k) / I0(k). */
  Tensor mean() const override { return loc_; }
  Tensor variance() const override;
  Tensor mode() const override { return loc_; }
  Constraint support() const override { return constraints::real(); }
  const Tensor& loc() const { return loc_; }
  const Tensor& concentration() const { return concentration_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"loc", loc_}, {"concentration", concentration_}};
  }

 private:
  Tensor loc_, concentration_;
};

/** GeneralizedPareto(loc, scale, concentration): on [loc, inf) for concentration >= 0, on
 *  [loc, loc - scale / concentration] below 0; concentration 0 is the shifted Exponential. */
class GeneralizedPareto : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<GeneralizedPareto>(p[0], p[1], p[2], validate_args_);
  }
  GeneralizedPareto(const Tensor& loc, const Tensor& scale, const Tensor& concentration, bool validate_args = true);
  std::string name() const override { return "GeneralizedPareto"; }
  bool has_rsample() const override { return true; }
  /** icdf of uniform draws. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return (scale_.log() + concentration_ + 1).expand(batch_shape_); }
  /** NaN where concentration >= 1 (torch's). */
  Tensor mean() const override;
  /** NaN where concentration >= 1/2 (torch's). */
  Tensor variance() const override;
  Tensor mode() const override { return loc_; }
  /** 1 - (1 + c z)^(-1/c), by expm1 so that small values keep their relative precision. */
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override;
  const Tensor& loc() const { return loc_; }
  const Tensor& scale() const { return scale_; }
  const Tensor& concentration() const { return concentration_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"loc", loc_}, {"scale", scale_}, {"concentration", concentration_}};
  }

 private:
  /** log(1 - cdf); at concentration 0 the exponential's, -z. */
  Tensor log_survival(const Tensor& value) const;
  Tensor loc_, scale_, concentration_;
};

/** ContinuousBernoulli(probs=None, logits=None) on [0, 1]: density C(p) p^x (1 - p)^(1 - x).
 *  probs are clamped to [eps, 1 - eps]; within (lims) of 1/2 the normaliser, the moments
 *  and the cdf use torch's Taylor expansions. */
class ContinuousBernoulli : public ProbsOrLogits {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits_ ? std::make_shared<ContinuousBernoulli>(std::nullopt, p[0], validate_args_)
                        : std::make_shared<ContinuousBernoulli>(p[0], std::nullopt, validate_args_);
  }
  ContinuousBernoulli(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits = std::nullopt,
                      bool validate_args = true);
  std::string name() const override { return "ContinuousBernoulli"; }
  bool has_rsample() const override { return true; }
  /** icdf of uniform draws. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::unit_interval(); }
  /** log C(p), the log normaliser (for the KL divergences). */
  Tensor log_norm() const;

 private:
  /** Where probs lie outside [0.499, 0.501], the closed forms are stable. */
  Tensor stable() const;
  /** probs, 0.499 inside the unstable region (so the closed forms stay finite there). */
  Tensor cut_probs() const;
};

}  // namespace ug::distributions
