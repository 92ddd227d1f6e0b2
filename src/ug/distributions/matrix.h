// Distributions over matrices: LKJCholesky (Cholesky factors of correlation matrices) and
// Wishart (positive-definite matrices), torch.distributions' formulas.
#pragma once

#include <optional>

#include "ug/distributions/distribution.h"
#include "ug/distributions/gamma.h"

namespace ug::distributions {

/** LKJCholesky(dim, concentration): L with L L^T ~ LKJ(concentration), density in L
 *  proportional to prod_{i >= 2} L_ii^(dim - i + 2 concentration - 2). Drawn by the onion
 *  method (no rsample, as torch's). */
class LKJCholesky : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<LKJCholesky>(dim_, p[0], validate_args_);
  }
  LKJCholesky(int64_t dim, const Tensor& concentration, bool validate_args = true);
  std::string name() const override { return "LKJCholesky"; }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Constraint support() const override { return constraints::corr_cholesky(); }
  int64_t dim() const { return dim_; }
  const Tensor& concentration() const { return concentration_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"concentration", concentration_}}; }

 private:
  int64_t dim_;
  Tensor concentration_;
};

/** Wishart(df, covariance_matrix | precision_matrix | scale_tril): sums of df outer products
 *  of Normal(0, covariance) vectors; df > dim - 1. Drawn by the Bartlett decomposition, its
 *  diagonal from Chi2 draws (so reparameterised); draws that are not positive-definite are
 *  redrawn up to 10 times. */
class Wishart : public Distribution {
 public:
  Wishart(const Tensor& df, const std::optional<Tensor>& covariance_matrix,
          const std::optional<Tensor>& precision_matrix = std::nullopt,
          const std::optional<Tensor>& scale_tril = std::nullopt, bool validate_args = true);
  std::string name() const override { return "Wishart"; }
  bool has_rsample() const override { return true; }
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  /** NaN where df <= dim + 1 (torch's). */
  Tensor mode() const override;
  Tensor variance() const override;
  Constraint support() const override { return constraints::positive_definite(); }
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override;
  const Tensor& df() const { return df_; }
  /** L, broadcast to the batch shape. */
  Tensor scale_tril() const;
  Tensor covariance_matrix() const;
  Tensor precision_matrix() const;

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override;

 private:
  /** One Bartlett draw: L A A^T L^T, A lower-triangular with sqrt(Chi2(df - i)) on its diagonal. */
  Tensor bartlett(const Dims& sample_shape) const;
  /** df viewed with two trailing unit dims, to scale matrices. */
  Tensor df_matrix() const;
  Tensor df_, tril_;   // tril_: the Cholesky factor of the covariance, not broadcast
  std::string given_;  // which matrix was given, for repr and expand
  Tensor given_value_;
};

/** The multivariate digamma function: sum_{i < p} digamma(x - i / 2). */
Tensor mvdigamma(const Tensor& x, int64_t p);

}  // namespace ug::distributions
