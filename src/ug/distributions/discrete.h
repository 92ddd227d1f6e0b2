// Distributions over categories and counts: Bernoulli, Categorical, OneHotCategorical,
// Binomial, Multinomial, Poisson, Geometric and NegativeBinomial, those with probabilities from
// probs or logits (exactly one of them; the other is derived as torch does).
#pragma once

#include <optional>

#include "ug/ops/binary.h"

#include "ug/distributions/distribution.h"

namespace ug::distributions {

/** A distribution given by probs or logits (exactly one; the constructor derives the other):
 *  both readable, the given one shown by repr. */
class ProbsOrLogits : public Distribution {
 public:
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }
  /** Whether logits were given: repr shows them, expand rebuilds from them. */
  bool from_logits() const { return from_logits_; }

 protected:
  ProbsOrLogits(const char* dist, const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                bool validate_args);
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{from_logits_ ? "logits" : "probs", from_logits_ ? logits_ : probs_}};
  }
  /** Elementwise probabilities (Bernoulli, Binomial): the one given, checked (probs against
   *  probs_in), and the other (sigmoid of logits; log-odds of the clamped probs). */
  void set_elementwise(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                       const Constraint& probs_in = constraints::unit_interval());

  Tensor probs_, logits_;
  bool from_logits_;
};

class Bernoulli : public ProbsOrLogits {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits_ ? std::make_shared<Bernoulli>(std::nullopt, p[0], validate_args_)
                        : std::make_shared<Bernoulli>(p[0], std::nullopt, validate_args_);
  }
  Bernoulli(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits = std::nullopt,
            bool validate_args = true);
  std::string name() const override { return "Bernoulli"; }
  /** ug::bernoulli of probs expanded to the extended shape. */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return probs_; }
  Tensor variance() const override;
  /** 1 where probs > 1/2, 0 below, NaN at 1/2. */
  Tensor mode() const override;
  Constraint support() const override { return constraints::boolean(); }
};

class Categorical : public ProbsOrLogits {
  friend class OneHotCategorical;
  friend class Multinomial;

 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits_ ? std::make_shared<Categorical>(std::nullopt, p[0], validate_args_)
                        : std::make_shared<Categorical>(p[0], std::nullopt, validate_args_);
  }
  /** probs (normalised over the last dim) or logits, [..., num_events]. */
  Categorical(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits = std::nullopt,
              bool validate_args = true);
  std::string name() const override { return "Categorical"; }
  /** Category indices (int64) by ug::multinomial over the rows of probs. */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  /** NaN, as in torch: categories have no order. */
  Tensor mean() const override;
  Tensor variance() const override { return mean(); }
  Tensor mode() const override { return probs_.argmax(-1); }
  Constraint support() const override { return constraints::integer_interval(0, num_events() - 1); }
  /** logits() are normalised: logsumexp over the last dim is 0. */
  int64_t num_events() const { return probs_.size(-1); }
};

/** Vectors with a single 1: a Categorical's draws one-hot encoded over the last dim. */
class OneHotCategorical : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return categorical_.from_logits_ ? std::make_shared<OneHotCategorical>(std::nullopt, p[0], validate_args_)
                                     : std::make_shared<OneHotCategorical>(p[0], std::nullopt, validate_args_);
  }
  OneHotCategorical(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits = std::nullopt,
                    bool validate_args = true);
  std::string name() const override { return "OneHotCategorical"; }
  /** One-hot vectors in the dtype of probs. */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return categorical_.entropy(); }
  Tensor mean() const override { return categorical_.probs(); }
  Tensor variance() const override { return categorical_.probs() * (1 - categorical_.probs()); }
  Tensor mode() const override;
  Constraint support() const override { return constraints::one_hot(); }
  const Tensor& probs() const { return categorical_.probs(); }
  const Tensor& logits() const { return categorical_.logits(); }
  bool from_logits() const { return categorical_.from_logits(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return categorical_params(); }

 private:
  Categorical categorical_;
  std::vector<std::pair<std::string, Tensor>> categorical_params() const;
};

/** Successes in total_count Bernoulli(probs) trials; sampled by ug::binomial. */
class Binomial : public ProbsOrLogits {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits_ ? std::make_shared<Binomial>(p[0], std::nullopt, p[1], validate_args_)
                        : std::make_shared<Binomial>(p[0], p[1], std::nullopt, validate_args_);
  }
  Binomial(const Tensor& total_count, const std::optional<Tensor>& probs,
           const std::optional<Tensor>& logits = std::nullopt, bool validate_args = true);
  std::string name() const override { return "Binomial"; }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override { return total_count_ * probs_; }
  Tensor variance() const override { return total_count_ * probs_ * (1 - probs_); }
  /** floor((n + 1) p), at most n. */
  Tensor mode() const override;
  Constraint support() const override;
  const Tensor& total_count() const { return total_count_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override;

 private:
  Tensor total_count_;  // in the dtype of probs
};

/** Counts of total_count draws of a Categorical over the last dim: vectors of counts. */
class Multinomial : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return categorical_.from_logits_ ? std::make_shared<Multinomial>(total_count_, std::nullopt, p[0], validate_args_)
                                     : std::make_shared<Multinomial>(total_count_, p[0], std::nullopt, validate_args_);
  }
  Multinomial(int64_t total_count, const std::optional<Tensor>& probs,
              const std::optional<Tensor>& logits = std::nullopt, bool validate_args = true);
  std::string name() const override { return "Multinomial"; }
  /** The Categorical's total_count draws counted per category, in the dtype of probs. */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override { return static_cast<double>(total_count_) * probs(); }
  Tensor variance() const override { return static_cast<double>(total_count_) * probs() * (1 - probs()); }
  /** Non-negative integers summing to at most total_count (torch's multinomial constraint). */
  Constraint support() const override;
  int64_t total_count() const { return total_count_; }
  const Tensor& probs() const { return categorical_.probs(); }
  const Tensor& logits() const { return categorical_.logits(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return categorical_.params(); }

 private:
  Categorical categorical_;
  int64_t total_count_;
};

/** Counts with mean rate; sampled by ug::poisson. */
class Poisson : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<Poisson>(p[0], validate_args_);
  }
  explicit Poisson(const Tensor& rate, bool validate_args = true);
  std::string name() const override { return "Poisson"; }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override { return rate_; }
  Tensor variance() const override { return rate_; }
  Tensor mode() const override { return rate_.floor(); }
  Constraint support() const override { return constraints::nonnegative_integer(); }
  const Tensor& rate() const { return rate_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"rate", rate_}}; }

 private:
  Tensor rate_;
};

/** The number of failures before the first success in Bernoulli(probs) trials. */
class Geometric : public ProbsOrLogits {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits_ ? std::make_shared<Geometric>(std::nullopt, p[0], validate_args_)
                        : std::make_shared<Geometric>(p[0], std::nullopt, validate_args_);
  }
  /** probs in (0, 1] (torch checks them positive too), or logits. */
  Geometric(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits = std::nullopt,
            bool validate_args = true);
  std::string name() const override { return "Geometric"; }
  /** floor(log u / log1p(-probs)), u uniform in [tiny, 1) (torch's inversion). */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return probs_.reciprocal() - 1; }
  Tensor variance() const override { return (probs_.reciprocal() - 1) / probs_; }
  Tensor mode() const override { return zeros_like(probs_); }
  Constraint support() const override { return constraints::nonnegative_integer(); }
};

/** The number of successes before total_count failures, each trial a success with probability
 *  probs: a Poisson whose rate is Gamma(total_count, exp(-logits)) (torch's sampler). */
class NegativeBinomial : public ProbsOrLogits {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return from_logits_ ? std::make_shared<NegativeBinomial>(p[0], std::nullopt, p[1], validate_args_)
                        : std::make_shared<NegativeBinomial>(p[0], p[1], std::nullopt, validate_args_);
  }
  /** total_count >= 0 (real), probs in [0, 1) or logits. */
  NegativeBinomial(const Tensor& total_count, const std::optional<Tensor>& probs,
                   const std::optional<Tensor>& logits = std::nullopt, bool validate_args = true);
  std::string name() const override { return "NegativeBinomial"; }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override { return total_count_ * logits_.exp(); }
  Tensor variance() const override { return mean() / (-logits_).sigmoid(); }
  /** floor((total_count - 1) exp(logits)), at least 0. */
  Tensor mode() const override;
  Constraint support() const override { return constraints::nonnegative_integer(); }
  const Tensor& total_count() const { return total_count_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override;

 private:
  Tensor total_count_;  // in the dtype of probs
};

/** Probabilities clamped to [eps, 1 - eps] of their dtype (torch's clamp_probs). */
Tensor clamp_probs(const Tensor& probs);

}  // namespace ug::distributions
