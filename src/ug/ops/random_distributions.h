// jax.random's distributions beyond uniform and normal, each a transform of those draws
// with an explicit key (ops/random.h): truncated_normal, exponential, laplace, logistic,
// cauchy, gumbel, rademacher, lognormal, choice, multivariate_normal, orthogonal, and gamma
// (by rejection) with those made from it: beta, dirichlet, chisquare, t, loggamma,
// generalized_normal and ball; the counts poisson, binomial and geometric; weibull_min, pareto,
// rayleigh, maxwell, double_sided_maxwell, wald and triangular. dtype is the default floating
// dtype unless given. Parameters broadcast to `shape`, by default to their own broadcast shape.
// Below, torch's spellings of some of them, drawn from the global generator (ug::manual_seed).
#pragma once

#include <optional>

#include "ug/core/tensor.h"

namespace ug::random {

/** A standard normal truncated to [lower, upper], by inverting its distribution function. */
Tensor truncated_normal(const Tensor& key, double lower, double upper, const Dims& shape,
                        std::optional<DType> dtype = std::nullopt);
/** Rate 1. */
Tensor exponential(const Tensor& key, const Dims& shape, std::optional<DType> dtype = std::nullopt);
/** Location 0, scale 1. */
Tensor laplace(const Tensor& key, const Dims& shape, std::optional<DType> dtype = std::nullopt);
Tensor logistic(const Tensor& key, const Dims& shape, std::optional<DType> dtype = std::nullopt);
Tensor cauchy(const Tensor& key, const Dims& shape, std::optional<DType> dtype = std::nullopt);
Tensor gumbel(const Tensor& key, const Dims& shape, std::optional<DType> dtype = std::nullopt);
/** -1 or 1 with equal probability (int32 unless given). */
Tensor rademacher(const Tensor& key, const Dims& shape, DType dtype = DType::Int32);
/** exp(sigma * a standard normal). */
Tensor lognormal(const Tensor& key, double sigma, const Dims& shape, std::optional<DType> dtype = std::nullopt);
/** Indices in [0, n) (int64) of `shape`, with or without replacement, uniform or with the
 *  probabilities p (1-d, n entries): jax.random.choice of an integer. */
Tensor choice(const Tensor& key, int64_t n, const Dims& shape, bool replace = true,
              const std::optional<Tensor>& p = std::nullopt);
/** Entries of a along axis picked as choice(key, a.size(axis), ...) picks indices, the
 *  picked axis replaced by `shape`. */
Tensor choice(const Tensor& key, const Tensor& a, const Dims& shape, bool replace = true,
              const std::optional<Tensor>& p = std::nullopt, int64_t axis = 0);
/** mean + L z with L L^T = cov (Cholesky); shape: the batch shape, by default mean's and
 *  cov's broadcast. */
Tensor multivariate_normal(const Tensor& key, const Tensor& mean, const Tensor& cov,
                           const std::optional<Dims>& shape = std::nullopt, std::optional<DType> dtype = std::nullopt);
/** Orthogonal n x n matrices drawn uniformly (Haar measure), with `shape` in front. */
Tensor orthogonal(const Tensor& key, int64_t n, const Dims& shape = {}, std::optional<DType> dtype = std::nullopt);

/** Gamma(a, 1) draws, a > 0 broadcast to `shape` (a's shape by default): Marsaglia and
 *  Tsang's rejection method, drawing again for the rejected elements only; a < 1 through
 *  Gamma(a + 1) * U^(1/a). Differentiable in a, as jax.random.gamma: its derivative is the
 *  implicit reparameterisation gradient gamma_grad (so are those of the samplers built on it). */
Tensor gamma(const Tensor& key, const Tensor& a, const std::optional<Dims>& shape = std::nullopt,
             std::optional<DType> dtype = std::nullopt);
/** dx/da for x a Gamma(a, 1) draw, its quantile held fixed (Figurnov et al.'s implicit
 *  reparameterisation): -(dP/da) / (dP/dx), P(a, x) the regularized lower incomplete gamma
 *  function, from igamma's series (x < a + 1) and continued fraction differentiated in a, each
 *  stopped once converged (300 terms at most), computed in float64 (relative error ~1e-13 up to
 *  a = 1000, 1e-6 past 2500); 0 where x is 0 or inf. One kernel (the op random_gamma_grad),
 *  except where a or x is differentiated (requires grad, or has a tangent): there the same
 *  formula written with ops, which differentiates in both. */
Tensor gamma_grad(const Tensor& a, const Tensor& x);
/** X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b). */
Tensor beta(const Tensor& key, const Tensor& a, const Tensor& b, const std::optional<Dims>& shape = std::nullopt,
            std::optional<DType> dtype = std::nullopt);
/** Gamma(alpha) draws over the last dim (alpha's), normalised to sum 1; `shape` is the batch. */
Tensor dirichlet(const Tensor& key, const Tensor& alpha, const std::optional<Dims>& shape = std::nullopt,
                 std::optional<DType> dtype = std::nullopt);
/** 2 Gamma(df / 2). */
Tensor chisquare(const Tensor& key, const Tensor& df, const std::optional<Dims>& shape = std::nullopt,
                 std::optional<DType> dtype = std::nullopt);
/** Student's t: a standard normal over sqrt(chisquare(df) / df). */
Tensor t(const Tensor& key, const Tensor& df, const std::optional<Dims>& shape = std::nullopt,
         std::optional<DType> dtype = std::nullopt);

/** log of a Gamma(a, 1) draw, finite where the draw itself underflows (a far below 1). */
Tensor loggamma(const Tensor& key, const Tensor& a, const std::optional<Dims>& shape = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
/** Density proportional to exp(-|x|^p), p > 0: a random sign times Gamma(1 / p)^(1 / p). */
Tensor generalized_normal(const Tensor& key, double p, const Dims& shape = {},
                          std::optional<DType> dtype = std::nullopt);
/** Points uniform in the unit p-norm ball in d dimensions, [*shape, d] (Barthe et al.:
 *  generalized normal draws over (their p-norm^p + an exponential draw)^(1/p)). */
Tensor ball(const Tensor& key, int64_t d, double p = 2, const Dims& shape = {},
            std::optional<DType> dtype = std::nullopt);

/** Poisson(lam) counts, lam >= 0 (int32 unless given): inversion from P(0) upwards for
 *  lam < 10, Hoermann's transformed rejection (PTRS) above, drawing again for the rejected
 *  elements only. */
Tensor poisson(const Tensor& key, const Tensor& lam, const std::optional<Dims>& shape = std::nullopt,
               DType dtype = DType::Int32);
/** Binomial(n, p) counts as floats (jax.random.binomial's dtype), n a non-negative integer and
 *  p in [0, 1]: inversion where n min(p, 1 - p) < 10, Hoermann's BTRS above. */
Tensor binomial(const Tensor& key, const Tensor& n, const Tensor& p, const std::optional<Dims>& shape = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
/** The number of Bernoulli(p) trials up to the first success, 1, 2, ...; p in (0, 1] (int32
 *  unless given). */
Tensor geometric(const Tensor& key, const Tensor& p, const std::optional<Dims>& shape = std::nullopt,
                 DType dtype = DType::Int32);
/** scale * Exponential^(1 / concentration). */
Tensor weibull_min(const Tensor& key, const Tensor& scale, const Tensor& concentration,
                   const std::optional<Dims>& shape = std::nullopt, std::optional<DType> dtype = std::nullopt);
/** exp(Exponential / b): Pareto with minimum 1 and shape b. */
Tensor pareto(const Tensor& key, const Tensor& b, const std::optional<Dims>& shape = std::nullopt,
              std::optional<DType> dtype = std::nullopt);
/** scale * sqrt(2 Exponential). */
Tensor rayleigh(const Tensor& key, const Tensor& scale, const std::optional<Dims>& shape = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
/** The length of a 3-d standard normal vector. */
Tensor maxwell(const Tensor& key, const Dims& shape = {}, std::optional<DType> dtype = std::nullopt);
/** loc + scale * a random sign * maxwell. */
Tensor double_sided_maxwell(const Tensor& key, const Tensor& loc, const Tensor& scale,
                            const std::optional<Dims>& shape = std::nullopt, std::optional<DType> dtype = std::nullopt);
/** Inverse Gaussian with this mean and shape 1 (Michael, Schucany and Haas). */
Tensor wald(const Tensor& key, const Tensor& mean, const std::optional<Dims>& shape = std::nullopt,
            std::optional<DType> dtype = std::nullopt);
/** Triangular on [left, right] peaking at mode, by inverting its distribution function. */
Tensor triangular(const Tensor& key, const Tensor& left, const Tensor& mode, const Tensor& right,
                  const std::optional<Dims>& shape = std::nullopt, std::optional<DType> dtype = std::nullopt);

}  // namespace ug::random

namespace ug {

/** torch.poisson: a Poisson(rate) count for each rate (floating, >= 0), in the rates' dtype. */
Tensor poisson(const Tensor& rates);
/** torch._standard_gamma: a Gamma(alpha, 1) draw for each alpha (floating, > 0), in its dtype,
 *  differentiable in alpha (random::gamma). */
Tensor standard_gamma(const Tensor& alpha);
/** torch._standard_gamma_grad(alpha, x): random::gamma_grad. */
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x);
/** torch.binomial: a Binomial(count, prob) draw for each element of their broadcast, in their
 *  (common floating) dtype. */
Tensor binomial(const Tensor& count, const Tensor& prob);
/** In place: geometric counts (trials up to the first success, p in (0, 1]), Cauchy(median,
 *  sigma), and exp(Normal(mean, std)). */
Tensor& geometric_(Tensor& t, double p);
Tensor& cauchy_(Tensor& t, double median = 0, double sigma = 1);
Tensor& log_normal_(Tensor& t, double mean = 1, double std = 2);

}  // namespace ug
