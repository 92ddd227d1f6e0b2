// Gamma and Beta, drawn by ug::random's rejection samplers from a key of the global generator.
// Their draws carry no reparameterised gradient, so neither has rsample (torch's have).
#pragma once

#include "ug/distributions/distribution.h"

namespace ug::distributions {

class Gamma : public Distribution {
 public:
  Gamma(const Tensor& concentration, const Tensor& rate, bool validate_args = true);
  std::string name() const override { return "Gamma"; }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
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

class Beta : public Distribution {
 public:
  Beta(const Tensor& concentration1, const Tensor& concentration0, bool validate_args = true);
  std::string name() const override { return "Beta"; }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
  Constraint support() const override { return constraints::unit_interval(); }
  const Tensor& concentration1() const { return c1_; }
  const Tensor& concentration0() const { return c0_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"concentration1", c1_}, {"concentration0", c0_}};
  }

 private:
  Tensor c1_, c0_;
};

}  // namespace ug::distributions
