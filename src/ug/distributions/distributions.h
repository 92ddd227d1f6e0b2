// ug::distributions: torch.distributions in C++ (Normal, Uniform, Exponential, Laplace,
// Bernoulli, Categorical, OneHotCategorical, Poisson, Gamma, Beta, MultivariateNormal,
// Independent and kl_divergence).
#pragma once

#include "ug/distributions/discrete.h"
#include "ug/distributions/distribution.h"
#include "ug/distributions/gamma.h"
#include "ug/distributions/kl.h"
#include "ug/distributions/multivariate.h"
#include "ug/distributions/univariate.h"
