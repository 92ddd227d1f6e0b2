// The distributions drawn from Gamma variates: Gamma, Chi2, Beta, Dirichlet, FisherSnedecor and
// InverseGamma, by ug::random's
// rejection sampler from a key of the global generator. That sampler's derivative in the
// concentration is the implicit reparameterisation gradient (random::gamma_grad), so all of
// them have rsample, as torch's do.
#pragma once

#include "ug/distributions/distribution.h"
#include "ug/distributions/transformed.h"
#include "ug/ops/binary.h"

namespace ug::distributions {

class Gamma : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Gamma>(p[0], p[1], validate_args_);
  }
  Gamma(const Tensor& concentration, const Tensor& rate, bool validate_args = true);
  std::string name() const override { return "Gamma"; }
  bool has_rsample() const override { return true; }
  /** random::gamma(concentration) / rate, kept above the dtype's smallest normal number. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
  Tensor mode() const override;
  /** The regularised lower incomplete gamma function at rate * value. */
  Tensor cdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::nonnegative(); }
  const Tensor& concentration() const { return concentration_; }
  const Tensor& rate() const { return rate_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"concentration", concentration_}, {"rate", rate_}};
  }

 private:
  Tensor concentration_, rate_;
};

/** Chi2(df): Gamma(df / 2, 1 / 2). */
class Chi2 : public Gamma {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Chi2>(p[0], validate_args_);
  }
  explicit Chi2(const Tensor& df, bool validate_args = true);
  std::string name() const override { return "Chi2"; }
  Tensor df() const { return concentration() * 2; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"df", df()}}; }
};

/** Dirichlet(concentration) over the last dim of concentration: points of the simplex. */
class Dirichlet : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Dirichlet>(p[0], validate_args_);
  }
  explicit Dirichlet(const Tensor& concentration, bool validate_args = true);
  std::string name() const override { return "Dirichlet"; }
  bool has_rsample() const override { return true; }
  /** random::dirichlet (Gamma draws normalised), kept inside (tiny, 1 - eps). */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
  /** (c - 1)+ normalised; where every c < 1, the first vertex (torch's). */
  Tensor mode() const override;
  Constraint support() const override { return constraints::simplex(); }
  const Tensor& concentration() const { return concentration_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"concentration", concentration_}}; }

 private:
  Tensor concentration_;
};

/** Beta(c1, c0): the first coordinate of Dirichlet([c1, c0]), drawn as X / (X + Y). */
class Beta : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Beta>(p[0], p[1], validate_args_);
  }
  Beta(const Tensor& concentration1, const Tensor& concentration0, bool validate_args = true);
  std::string name() const override { return "Beta"; }
  bool has_rsample() const override { return true; }
  /** random::beta: X / (X + Y) with X ~ Gamma(c1), Y ~ Gamma(c0). */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
  Tensor mode() const override { return dirichlet_.mode().select(-1, 0); }
  Constraint support() const override { return constraints::unit_interval(); }
  const Tensor& concentration1() const { return c1_; }
  const Tensor& concentration0() const { return c0_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"concentration1", c1_}, {"concentration0", c0_}};
  }

 private:
  Tensor c1_, c0_;
  Dirichlet dirichlet_;  // over [c1, c0], for the mode
};

/** FisherSnedecor(df1, df2): (X1 / df1) / (X2 / df2) with X1 ~ Chi2(df1), X2 ~ Chi2(df2). */
class FisherSnedecor : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<FisherSnedecor>(p[0], p[1], validate_args_);
  }
  FisherSnedecor(const Tensor& df1, const Tensor& df2, bool validate_args = true);
  std::string name() const override { return "FisherSnedecor"; }
  bool has_rsample() const override { return true; }
  /** Gamma(df1 / 2, df1) over Gamma(df2 / 2, df2), kept above the dtype's smallest normal. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  /** NaN where df2 <= 2 (torch's). */
  Tensor mean() const override;
  /** NaN where df2 <= 4 (torch's). */
  Tensor variance() const override;
  /** NaN where df1 <= 2 (torch's). */
  Tensor mode() const override;
  Constraint support() const override { return constraints::positive(); }
  const Tensor& df1() const { return df1_; }
  const Tensor& df2() const { return df2_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"df1", df1_}, {"df2", df2_}}; }

 private:
  Tensor df1_, df2_;
};

/** InverseGamma(concentration, rate): 1 / Gamma(concentration, rate). */
class InverseGamma : public TransformedDistribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<InverseGamma>(p[0], p[1], validate_args());
  }
  /** An InverseGamma again, of the parameters expanded. */
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override {
    return Distribution::expand(batch_shape);
  }
  InverseGamma(const Tensor& concentration, const Tensor& rate, bool validate_args = true);
  std::string name() const override { return "InverseGamma"; }
  Tensor entropy() const override;
  /** inf where concentration <= 1. */
  Tensor mean() const override;
  /** inf where concentration <= 2. */
  Tensor variance() const override;
  Tensor mode() const override { return rate() / (concentration() + 1); }
  const Tensor& concentration() const { return gamma().concentration(); }
  const Tensor& rate() const { return gamma().rate(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"concentration", concentration()}, {"rate", rate()}};
  }

 private:
  const Gamma& gamma() const { return static_cast<const Gamma&>(*base_dist()); }
};

}  // namespace ug::distributions
