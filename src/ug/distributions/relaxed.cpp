#include "ug/distributions/relaxed.h"

#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/random.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

// ---- LogitRelaxedBernoulli, RelaxedBernoulli ----------------------------------------------

LogitRelaxedBernoulli::LogitRelaxedBernoulli(const Tensor& temperature, const std::optional<Tensor>& probs,
                                             const std::optional<Tensor>& logits, bool validate_args)
    : ProbsOrLogits("LogitRelaxedBernoulli", probs, logits, validate_args), temperature_(temperature) {
  set_elementwise(probs, logits);
  batch_shape_ = probs_.shape();
}

Tensor LogitRelaxedBernoulli::rsample(const Dims& sample_shape) const {
  const Tensor u = clamp_probs(rand(extended_shape(sample_shape), like(probs_)));
  return (u.log() - (-u).log1p() + logits_) / temperature_;
}

Tensor LogitRelaxedBernoulli::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor diff = logits_ - value * temperature_;
  return temperature_.log() + diff - 2 * diff.exp().log1p();
}

RelaxedBernoulli::RelaxedBernoulli(const Tensor& temperature, const std::optional<Tensor>& probs,
                                   const std::optional<Tensor>& logits, bool validate_args)
    : TransformedDistribution(std::make_shared<LogitRelaxedBernoulli>(temperature, probs, logits, validate_args),
                              {std::make_shared<SigmoidTransform>()}, validate_args) {}

// ---- ExpRelaxedCategorical, RelaxedOneHotCategorical --------------------------------------

ExpRelaxedCategorical::ExpRelaxedCategorical(const Tensor& temperature, const std::optional<Tensor>& probs,
                                             const std::optional<Tensor>& logits, bool validate_args)
    : Distribution({}, {}, validate_args), temperature_(temperature), categorical_(probs, logits, validate_args) {
  batch_shape_ = categorical_.batch_shape();
  event_shape_ = {categorical_.num_events()};
}

Tensor ExpRelaxedCategorical::rsample(const Dims& sample_shape) const {
  const Tensor u = clamp_probs(rand(extended_shape(sample_shape), like(logits())));
  const Tensor gumbels = -(-u.log()).log();
  const Tensor scores = (logits() + gumbels) / temperature_;
  return scores - scores.logsumexp({-1}, true);
}

Tensor ExpRelaxedCategorical::log_prob(const Tensor& value) const {
  validate_sample(value);
  const auto k = static_cast<double>(event_shape_[0]);
  // log Gamma(K) + (K - 1) log temperature: the density's normaliser
  const Tensor log_scale = std::lgamma(k) + (k - 1) * temperature_.log();
  Tensor score = logits() - value * temperature_;
  score = (score - score.logsumexp({-1}, true)).sum({-1});
  return score + log_scale;
}

RelaxedOneHotCategorical::RelaxedOneHotCategorical(const Tensor& temperature, const std::optional<Tensor>& probs,
                                                   const std::optional<Tensor>& logits, bool validate_args)
    : TransformedDistribution(std::make_shared<ExpRelaxedCategorical>(temperature, probs, logits, validate_args),
                              {std::make_shared<ExpTransform>()}, validate_args) {}

// ---- OneHotCategoricalStraightThrough ------------------------------------------------------

Tensor OneHotCategoricalStraightThrough::rsample(const Dims& sample_shape) const {
  return sample(sample_shape) + (probs() - probs().detach());
}

}  // namespace ug::distributions
