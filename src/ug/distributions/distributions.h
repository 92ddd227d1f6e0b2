// ug::distributions: torch.distributions in C++ (Normal, Uniform, Exponential, Laplace,
// StudentT, Cauchy, HalfCauchy, HalfNormal, Gumbel, Weibull, Pareto, GeneralizedPareto,
// Kumaraswamy, VonMises, ContinuousBernoulli, LogNormal, LogisticNormal, Bernoulli, Binomial,
// Geometric, NegativeBinomial, Categorical, OneHotCategorical, Multinomial, Poisson, Gamma,
// Chi2, Beta, Dirichlet, FisherSnedecor, InverseGamma, MultivariateNormal,
// LowRankMultivariateNormal, LKJCholesky, Wishart, Independent, MixtureSameFamily,
// RelaxedBernoulli, RelaxedOneHotCategorical, OneHotCategoricalStraightThrough,
// TransformedDistribution with its transforms, biject_to, transform_to and kl_divergence).
#pragma once

#include "ug/distributions/continuous.h"
#include "ug/distributions/discrete.h"
#include "ug/distributions/distribution.h"
#include "ug/distributions/gamma.h"
#include "ug/distributions/kl.h"
#include "ug/distributions/matrix.h"
#include "ug/distributions/mixture.h"
#include "ug/distributions/multivariate.h"
#include "ug/distributions/relaxed.h"
#include "ug/distributions/structured_transforms.h"
#include "ug/distributions/transformed.h"
#include "ug/distributions/univariate.h"
