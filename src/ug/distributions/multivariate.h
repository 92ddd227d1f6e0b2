// Distributions over vectors: MultivariateNormal (from a covariance or its Cholesky factor),
// LowRankMultivariateNormal (a low-rank plus diagonal covariance) and Independent (batch dims of
// another distribution read as event dims).
#pragma once

#include <memory>
#include <optional>

#include "ug/distributions/distribution.h"

namespace ug::distributions {

class MultivariateNormal : public Distribution {
 public:
  /** loc [..., k] with exactly one of covariance_matrix or scale_tril [..., k, k]. */
  MultivariateNormal(const Tensor& loc, const std::optional<Tensor>& covariance_matrix,
                     const std::optional<Tensor>& scale_tril = std::nullopt, bool validate_args = true);
  std::string name() const override { return "MultivariateNormal"; }
  bool has_rsample() const override { return true; }
  /** loc + L eps, eps = ug::randn of the extended shape. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
  Constraint support() const override { return constraints::independent(constraints::real(), 1); }
  const Tensor& loc() const { return loc_; }
  /** L, broadcast to the batch shape. */
  Tensor scale_tril() const;
  Tensor covariance_matrix() const;
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override;

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override;

 private:
  Tensor loc_, tril_;  // tril_: the Cholesky factor, not broadcast
  std::optional<Tensor> covariance_;
  Tensor half_log_det() const;
};

/** A normal over vectors with the covariance cov_factor cov_factor^T + diag(cov_diag): loc
 *  [..., n], cov_factor [..., n, r], cov_diag [..., n] (positive), broadcast. Its log_prob and
 *  entropy take the Woodbury identity and the determinant lemma through the r x r capacitance
 *  I + W^T D^-1 W, never forming the n x n covariance. */
class LowRankMultivariateNormal : public Distribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<LowRankMultivariateNormal>(p[0], p[1], p[2], validate_args_);
  }
  LowRankMultivariateNormal(const Tensor& loc, const Tensor& cov_factor, const Tensor& cov_diag,
                            bool validate_args = true);
  std::string name() const override { return "LowRankMultivariateNormal"; }
  bool has_rsample() const override { return true; }
  /** loc + W eps_r + sqrt(D) eps_n, both eps from ug::randn. */
  Tensor rsample(const Dims& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
  Constraint support() const override { return constraints::independent(constraints::real(), 1); }
  const Tensor& loc() const { return loc_; }
  const Tensor& cov_factor() const { return cov_factor_; }
  const Tensor& cov_diag() const { return cov_diag_; }
  Tensor covariance_matrix() const;
  Tensor precision_matrix() const;
  Tensor scale_tril() const;
  /** log det(W W^T + D) = log det(capacitance) + sum log D. */
  Tensor log_det() const;
  /** x^T (W W^T + D)^-1 x over the last dim of x, by the Woodbury identity. */
  Tensor mahalanobis(const Tensor& x) const;
  /** The Cholesky factor of the capacitance I + W^T D^-1 W, [..., r, r]. */
  const Tensor& capacitance_tril() const { return capacitance_tril_; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override {
    return {{"loc", loc_}, {"cov_factor", cov_factor_}, {"cov_diag", cov_diag_}};
  }

 private:
  Tensor loc_, cov_factor_, cov_diag_, capacitance_tril_;
};

class Independent : public Distribution {
 public:
  /** The last `reinterpreted_batch_ndims` batch dims of `base` become event dims. */
  Independent(std::shared_ptr<const Distribution> base, int64_t reinterpreted_batch_ndims, bool validate_args = true);
  std::string name() const override { return "Independent"; }
  bool has_rsample() const override { return base_->has_rsample(); }
  Tensor sample(const Dims& sample_shape = {}) const override { return base_->sample(sample_shape); }
  Tensor rsample(const Dims& sample_shape = {}) const override { return base_->rsample(sample_shape); }
  Tensor log_prob(const Tensor& value) const override { return sum_rightmost(base_->log_prob(value), ndims_); }
  Tensor entropy() const override { return sum_rightmost(base_->entropy(), ndims_); }
  Tensor mean() const override { return base_->mean(); }
  Tensor variance() const override { return base_->variance(); }
  Tensor mode() const override { return base_->mode(); }
  Constraint support() const override { return constraints::independent(base_->support(), ndims_); }
  const std::shared_ptr<const Distribution>& base_dist() const { return base_; }
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override;
  int64_t reinterpreted_batch_ndims() const { return ndims_; }
  std::string repr() const override { return "Independent(" + base_->repr() + ", " + std::to_string(ndims_) + ")"; }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {}; }

 private:
  std::shared_ptr<const Distribution> base_;
  int64_t ndims_;
};

/** The squared Mahalanobis distance |L^-1 x|^2 over the last dim, broadcasting L and x. */
Tensor batch_mahalanobis(const Tensor& L, const Tensor& x);

}  // namespace ug::distributions
