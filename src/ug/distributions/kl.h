// KL(p || q) in closed form for pairs of the same family (torch.distributions.kl_divergence).
#pragma once

#include "ug/distributions/distribution.h"

namespace ug::distributions {

/** KL(p || q) over the batch for two of one family: Normal, Bernoulli, Categorical,
 *  OneHotCategorical, Uniform, Exponential, Laplace, Gamma (Chi2), Beta, Dirichlet, Poisson, MultivariateNormal,
 *  Independent, Cauchy, HalfNormal, Gumbel, Pareto, Geometric and LowRankMultivariateNormal; NotImplementedError naming
 * both types for any other pair. */
Tensor kl_divergence(const Distribution& p, const Distribution& q);

}  // namespace ug::distributions
