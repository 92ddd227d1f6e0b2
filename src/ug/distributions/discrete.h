// Distributions over categories: Bernoulli and Categorical, each from probs or logits
// (exactly one of them; the other is derived as torch does).
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

 protected:
  ProbsOrLogits(const char* dist, const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                bool validate_args);
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{from_logits_ ? "logits" : "probs", from_logits_ ? logits_ : probs_}};
  }

  Tensor probs_, logits_;
  bool from_logits_;
};

class Bernoulli : public ProbsOrLogits {
 public:
  Bernoulli(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits = std::nullopt,
            bool validate_args = true);
  std::string name() const override { return "Bernoulli"; }
  /** ug::bernoulli of probs expanded to the extended shape. */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return probs_; }
  Tensor variance() const override;
  Constraint support() const override { return constraints::boolean(); }
};

class Categorical : public ProbsOrLogits {
  friend class OneHotCategorical;

 public:
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
  Constraint support() const override { return constraints::integer_interval(0, num_events() - 1); }
  /** logits() are normalised: logsumexp over the last dim is 0. */
  int64_t num_events() const { return probs_.size(-1); }
};

/** Vectors with a single 1: a Categorical's draws one-hot encoded over the last dim. */
class OneHotCategorical : public Distribution {
 public:
  OneHotCategorical(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits = std::nullopt,
                    bool validate_args = true);
  std::string name() const override { return "OneHotCategorical"; }
  /** One-hot vectors in the dtype of probs. */
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return categorical_.entropy(); }
  Tensor mean() const override { return categorical_.probs(); }
  Tensor variance() const override { return categorical_.probs() * (1 - categorical_.probs()); }
  Constraint support() const override { return constraints::one_hot(); }
  const Tensor& probs() const { return categorical_.probs(); }
  const Tensor& logits() const { return categorical_.logits(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return categorical_params(); }

 private:
  Categorical categorical_;
  std::vector<std::pair<std::string, Tensor>> categorical_params() const;
};

/** Counts with mean rate; sampled by ug::poisson. */
class Poisson : public Distribution {
 public:
  explicit Poisson(const Tensor& rate, bool validate_args = true);
  std::string name() const override { return "Poisson"; }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override { return rate_; }
  Tensor variance() const override { return rate_; }
  Constraint support() const override { return constraints::nonnegative_integer(); }
  const Tensor& rate() const { return rate_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"rate", rate_}}; }

 private:
  Tensor rate_;
};

/** Probabilities clamped to [eps, 1 - eps] of their dtype (torch's clamp_probs). */
Tensor clamp_probs(const Tensor& probs);

}  // namespace ug::distributions
