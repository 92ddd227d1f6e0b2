// KL(p || q) in closed form (torch.distributions.kl_divergence): pairs of the same family and
// torch's pairs of two families with Gumbel, Pareto or LowRankMultivariateNormal.
#pragma once

#include "ug/distributions/distribution.h"

namespace ug::distributions {

/** KL(p || q) over the batch for two of one family: Normal, Bernoulli, Categorical,
 *  OneHotCategorical, Uniform, Exponential, Laplace, Gamma (Chi2), Beta, Dirichlet, Poisson,
 *  MultivariateNormal, Independent, Cauchy, HalfNormal, Gumbel, Pareto, Geometric and
 *  LowRankMultivariateNormal; for p and q of (Exponential, Gamma, Normal or Uniform; Gumbel),
 *  (Gumbel, Normal), (Pareto; Exponential, Gamma or Normal), (Uniform, Pareto) and
 *  MultivariateNormal with LowRankMultivariateNormal either way; inf for p a Beta,
 *  Exponential, Gamma, Laplace, Normal or Gumbel and q a Pareto, p a Gumbel and q a Beta,
 *  Exponential, Gamma or Uniform, p a Pareto and q a Beta or Uniform (p has mass where q has
 *  none). NotImplementedError naming both types for any other pair. */
Tensor kl_divergence(const Distribution& p, const Distribution& q);

}  // namespace ug::distributions
