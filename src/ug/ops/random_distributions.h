// jax.random's distributions beyond uniform and normal, each a transform of those draws
// with an explicit key (ops/random.h): truncated_normal, exponential, laplace, logistic,
// cauchy, gumbel, rademacher, lognormal, choice, multivariate_normal, orthogonal, and gamma
// (by rejection) with those made from it: beta, dirichlet, chisquare and t. dtype is the
// default floating dtype unless given.
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
 *  Gamma(a + 1) * U^(1/a). */
Tensor gamma(const Tensor& key, const Tensor& a, const std::optional<Dims>& shape = std::nullopt,
             std::optional<DType> dtype = std::nullopt);
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

}  // namespace ug::random
