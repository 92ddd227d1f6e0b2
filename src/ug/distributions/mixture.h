// MixtureSameFamily: a Categorical's choice among the components along the rightmost batch dim of
// one distribution (torch.distributions.MixtureSameFamily).
#pragma once

#include <memory>

#include "ug/distributions/discrete.h"

namespace ug::distributions {

/** mixture [B, k] picks one of the k components of component [B, k] (batch) x event. */
class MixtureSameFamily : public Distribution {
 public:
  MixtureSameFamily(std::shared_ptr<const Categorical> mixture, std::shared_ptr<const Distribution> component,
                    bool validate_args = true);
  std::string name() const override { return "MixtureSameFamily"; }
  /** The component draws gathered at the mixture's draws. */
  Tensor sample(const Dims& sample_shape = {}) const override;
  /** logsumexp over the components of their log_prob plus the mixture's log-weights. */
  Tensor log_prob(const Tensor& value) const override;
  /** The weighted components' cdfs (univariate components). */
  Tensor cdf(const Tensor& value) const override;
  Tensor mean() const override;
  /** By the law of total variance: the mean of the variances plus the variance of the means. */
  Tensor variance() const override;
  Constraint support() const override { return component_->support(); }
  std::string repr() const override;
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override;
  const std::shared_ptr<const Categorical>& mixture_distribution() const { return mixture_; }
  const std::shared_ptr<const Distribution>& component_distribution() const { return component_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {}; }

 private:
  /** The mixture's probs [..., k] with the event dims appended, to weigh the components' moments. */
  Tensor weights() const;
  std::shared_ptr<const Categorical> mixture_;
  std::shared_ptr<const Distribution> component_;
};

}  // namespace ug::distributions
