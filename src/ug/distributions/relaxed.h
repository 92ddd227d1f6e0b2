// Continuous relaxations of the discrete distributions (Maddison et al.'s Concrete, Jang et al.'s
// Gumbel-softmax), reparameterised: LogitRelaxedBernoulli and RelaxedBernoulli (its sigmoid),
// ExpRelaxedCategorical and RelaxedOneHotCategorical (its exp), each at a temperature; and
// OneHotCategoricalStraightThrough, whose rsample passes the gradient of probs through a draw.
#pragma once

#include "ug/distributions/discrete.h"
#include "ug/distributions/transformed.h"

namespace ug::distributions {

/** The logit of a relaxed Bernoulli draw: (logit(u) + logits) / temperature, over the reals. */
class LogitRelaxedBernoulli : public ProbsOrLogits {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits_ ? std::make_shared<LogitRelaxedBernoulli>(temperature_, std::nullopt, p[0], validate_args_)
                        : std::make_shared<LogitRelaxedBernoulli>(temperature_, p[0], std::nullopt, validate_args_);
  }
  LogitRelaxedBernoulli(const Tensor& temperature, const std::optional<Tensor>& probs,
                        const std::optional<Tensor>& logits = std::nullopt, bool validate_args = true);
  std::string name() const override { return "LogitRelaxedBernoulli"; }
  bool has_rsample() const override { return true; }
  /** u uniform, clamped to [eps, 1 - eps] (torch's clamp_probs). */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Constraint support() const override { return constraints::real(); }
  const Tensor& temperature() const { return temperature_; }

 private:
  Tensor temperature_;
};

/** sigmoid of a LogitRelaxedBernoulli: values in (0, 1). */
class RelaxedBernoulli : public TransformedDistribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return base().from_logits()
               ? std::make_shared<RelaxedBernoulli>(temperature(), std::nullopt, p[0], validate_args())
               : std::make_shared<RelaxedBernoulli>(temperature(), p[0], std::nullopt, validate_args());
  }
  /** A RelaxedBernoulli again, of the parameters expanded. */
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override {
    return Distribution::expand(batch_shape);
  }
  RelaxedBernoulli(const Tensor& temperature, const std::optional<Tensor>& probs,
                   const std::optional<Tensor>& logits = std::nullopt, bool validate_args = true);
  std::string name() const override { return "RelaxedBernoulli"; }
  Constraint support() const override { return constraints::unit_interval(); }
  const Tensor& temperature() const { return base().temperature(); }
  const Tensor& probs() const { return base().probs(); }
  const Tensor& logits() const { return base().logits(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{base().from_logits() ? "logits" : "probs", base().from_logits() ? logits() : probs()}};
  }

 private:
  const LogitRelaxedBernoulli& base() const { return static_cast<const LogitRelaxedBernoulli&>(*base_dist()); }
};

/** The log of a relaxed one-hot draw: log_softmax((logits + Gumbel noise) / temperature) over
 *  the last dim. */
class ExpRelaxedCategorical : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return categorical_.from_logits()
               ? std::make_shared<ExpRelaxedCategorical>(temperature_, std::nullopt, p[0], validate_args_)
               : std::make_shared<ExpRelaxedCategorical>(temperature_, p[0], std::nullopt, validate_args_);
  }
  ExpRelaxedCategorical(const Tensor& temperature, const std::optional<Tensor>& probs,
                        const std::optional<Tensor>& logits = std::nullopt, bool validate_args = true);
  std::string name() const override { return "ExpRelaxedCategorical"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Constraint support() const override { return constraints::independent(constraints::real(), 1); }
  const Tensor& temperature() const { return temperature_; }
  const Tensor& probs() const { return categorical_.probs(); }
  const Tensor& logits() const { return categorical_.logits(); }
  bool from_logits() const { return categorical_.from_logits(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{from_logits() ? "logits" : "probs", from_logits() ? logits() : probs()}};
  }

 private:
  Tensor temperature_;
  Categorical categorical_;
};

/** exp of an ExpRelaxedCategorical: points of the simplex. */
class RelaxedOneHotCategorical : public TransformedDistribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return base().from_logits()
               ? std::make_shared<RelaxedOneHotCategorical>(temperature(), std::nullopt, p[0], validate_args())
               : std::make_shared<RelaxedOneHotCategorical>(temperature(), p[0], std::nullopt, validate_args());
  }
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override {
    return Distribution::expand(batch_shape);
  }
  RelaxedOneHotCategorical(const Tensor& temperature, const std::optional<Tensor>& probs,
                           const std::optional<Tensor>& logits = std::nullopt, bool validate_args = true);
  std::string name() const override { return "RelaxedOneHotCategorical"; }
  Constraint support() const override { return constraints::simplex(); }
  const Tensor& temperature() const { return base().temperature(); }
  const Tensor& probs() const { return base().probs(); }
  const Tensor& logits() const { return base().logits(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{base().from_logits() ? "logits" : "probs", base().from_logits() ? logits() : probs()}};
  }

 private:
  const ExpRelaxedCategorical& base() const { return static_cast<const ExpRelaxedCategorical&>(*base_dist()); }
};

/** A OneHotCategorical whose rsample is the one-hot draw plus probs - probs.detach(): its value
 *  the draw, its gradient that of probs (the straight-through estimator). */
class OneHotCategoricalStraightThrough : public OneHotCategorical {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits() ? std::make_shared<OneHotCategoricalStraightThrough>(std::nullopt, p[0], validate_args_)
                         : std::make_shared<OneHotCategoricalStraightThrough>(p[0], std::nullopt, validate_args_);
  }
  using OneHotCategorical::OneHotCategorical;
  std::string name() const override { return "OneHotCategoricalStraightThrough"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override;
};

}  // namespace ug::distributions
