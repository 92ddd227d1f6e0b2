#include "ug/distributions/mixture.h"

#include "ug/core/error.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"

namespace ug::distributions {

MixtureSameFamily::MixtureSameFamily(std::shared_ptr<const Categorical> mixture,
                                     std::shared_ptr<const Distribution> component, bool validate_args)
    : Distribution({}, component->event_shape(), validate_args),
      mixture_(std::move(mixture)),
      component_(std::move(component)) {
  const Dims& mb = mixture_->batch_shape();
  const Dims& cb = component_->batch_shape();
  if (cb.empty()) fail("[MixtureSameFamily] component_distribution must have at least one batch dim (the components)");
  const Dims batch(cb.begin(), cb.end() - 1);
  for (size_t i = 1; i <= std::min(mb.size(), batch.size()); ++i) {
    const int64_t a = mb[mb.size() - i], b = batch[batch.size() - i];
    if (a != 1 && b != 1 && a != b)
      fail("[MixtureSameFamily] `mixture_distribution.batch_shape` (", shape_str(mb),
           ") is not compatible with `component_distribution.batch_shape` (", shape_str(cb), ")");
  }
  if (mixture_->num_events() != cb.back())
    fail("[MixtureSameFamily] `mixture_distribution` component (", mixture_->num_events(),
         ") does not equal `component_distribution.batch_shape[-1]` (", cb.back(), ")");
  batch_shape_ = batch;
}

std::string MixtureSameFamily::repr() const {
  return "MixtureSameFamily(\n  " + mixture_->repr() + ",\n  " + component_->repr() + ")";
}

std::shared_ptr<Distribution> MixtureSameFamily::expand(const Dims& batch_shape) const {
  auto mixture = std::static_pointer_cast<const Categorical>(mixture_->expand(batch_shape));
  return std::make_shared<MixtureSameFamily>(mixture, component_->expand(concat(batch_shape, {mixture_->num_events()})),
                                             validate_args_);
}

Tensor MixtureSameFamily::weights() const {
  Tensor p = mixture_->probs();
  for (size_t i = 0; i < event_shape_.size(); ++i) p = p.unsqueeze(-1);
  return p;
}

Tensor MixtureSameFamily::mean() const {
  const auto dim = -1 - static_cast<int64_t>(event_shape_.size());
  return (weights() * component_->mean()).sum({dim});
}

Tensor MixtureSameFamily::variance() const {
  const auto dim = -1 - static_cast<int64_t>(event_shape_.size());
  const Tensor w = weights();
  const Tensor mean_of_variances = (w * component_->variance()).sum({dim});
  const Tensor variance_of_means = (w * (component_->mean() - mean().unsqueeze(dim)).square()).sum({dim});
  return mean_of_variances + variance_of_means;
}

Tensor MixtureSameFamily::log_prob(const Tensor& value) const {
  validate_sample(value);
  // value against every component: a components dim before the event dims
  const Tensor x = value.unsqueeze(-1 - static_cast<int64_t>(event_shape_.size()));
  return (component_->log_prob(x) + mixture_->logits().log_softmax(-1)).logsumexp({-1});
}

Tensor MixtureSameFamily::cdf(const Tensor& value) const {
  validate_sample(value);
  const Tensor x = value.unsqueeze(-1 - static_cast<int64_t>(event_shape_.size()));
  return (component_->cdf(x) * mixture_->probs()).sum({-1});
}

Tensor MixtureSameFamily::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  const auto gather_dim = static_cast<int64_t>(sample_shape.size() + batch_shape_.size());
  const Tensor picks = mixture_->expand(batch_shape_)->sample(sample_shape);  // [S, B]
  const Tensor draws = component_->sample(sample_shape);                      // [S, B, k, E]
  // The pick as an index along the components dim, the same for every event element.
  Tensor index = picks.unsqueeze(-1);
  for (size_t i = 0; i < event_shape_.size(); ++i) index = index.unsqueeze(-1);
  Dims shape = draws.shape();
  shape[gather_dim] = 1;
  return draws.gather(gather_dim, index.expand(shape).contiguous()).squeeze({gather_dim});
}

}  // namespace ug::distributions
