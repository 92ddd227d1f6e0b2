#include "ug/distributions/multivariate.h"

#include <numbers>

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
Dims drop_last(const Tensor& t, size_t n) { return Dims(t.shape().begin(), t.shape().end() - n); }
Dims with(const Dims& d, std::initializer_list<int64_t> tail) { return concat(d, Dims(tail)); }
}  // namespace

Tensor batch_mahalanobis(const Tensor& L, const Tensor& x) {
  Tensor y = linalg::solve_triangular(L, x.unsqueeze(-1), /*upper=*/false);
  return y.squeeze({-1}).square().sum({-1});
}

// ---- MultivariateNormal ------------------------------------------------------------------

MultivariateNormal::MultivariateNormal(const Tensor& loc, const std::optional<Tensor>& covariance_matrix,
                                       const std::optional<Tensor>& scale_tril, bool validate_args)
    : Distribution({}, {}, validate_args), covariance_(covariance_matrix) {
  if (loc.dim() < 1) fail("[MultivariateNormal] loc must be at least one-dimensional");
  if (covariance_matrix.has_value() == scale_tril.has_value())
    fail("[MultivariateNormal] exactly one of covariance_matrix or scale_tril may be specified");
  const Tensor& m = covariance_matrix ? *covariance_matrix : *scale_tril;
  if (m.dim() < 2)
    fail("[MultivariateNormal] ", covariance_matrix ? "covariance_matrix" : "scale_tril",
         " must be at least two-dimensional, with optional leading batch dimensions");
  batch_shape_ = broadcast_shapes({drop_last(m, 2), drop_last(loc, 1)});
  event_shape_ = {loc.size(-1)};
  loc_ = loc.expand(with(batch_shape_, {loc.size(-1)}));
  tril_ = m;  // repr() names it should the check below fail
  if (covariance_matrix) {
    check_param("covariance_matrix", m, constraints::positive_definite());
    tril_ = linalg::cholesky(m);
  } else {
    check_param("scale_tril", m, constraints::lower_cholesky());
  }
  check_param("loc", loc_, constraints::independent(constraints::real(), 1));
}

std::vector<std::pair<std::string, Tensor>> MultivariateNormal::params() const {
  return {{"loc", loc_}, {covariance_ ? "covariance_matrix" : "scale_tril", covariance_ ? *covariance_ : tril_}};
}

std::shared_ptr<Distribution> MultivariateNormal::expand(const Dims& batch_shape) const {
  const int64_t k = loc_.size(-1);
  const Tensor loc = loc_.expand(concat(batch_shape, {k}));
  if (covariance_)
    return std::make_shared<MultivariateNormal>(loc, covariance_->expand(concat(batch_shape, {k, k})), std::nullopt,
                                                validate_args_);
  return std::make_shared<MultivariateNormal>(loc, std::nullopt, tril_.expand(concat(batch_shape, {k, k})),
                                              validate_args_);
}

std::shared_ptr<Distribution> Independent::expand(const Dims& batch_shape) const {
  const Dims& inner = base_->batch_shape();
  const Dims reinterpreted(inner.end() - ndims_, inner.end());
  return std::make_shared<Independent>(base_->expand(concat(batch_shape, reinterpreted)), ndims_, validate_args_);
}

Tensor MultivariateNormal::scale_tril() const {
  return tril_.expand(with(batch_shape_, {tril_.size(-2), tril_.size(-1)}));
}

Tensor MultivariateNormal::covariance_matrix() const {
  return tril_.matmul(tril_.mT()).expand(with(batch_shape_, {tril_.size(-2), tril_.size(-1)}));
}

Tensor MultivariateNormal::half_log_det() const { return tril_.diagonal(0, -2, -1).log().sum({-1}); }

Tensor MultivariateNormal::rsample(const Dims& sample_shape) const {
  Tensor eps = randn(extended_shape(sample_shape), {loc_.dtype(), loc_.device()});
  return loc_ + tril_.matmul(eps.unsqueeze(-1)).squeeze({-1});
}

Tensor MultivariateNormal::log_prob(const Tensor& value) const {
  validate_sample(value);
  Tensor m = batch_mahalanobis(tril_, value - loc_);
  double k = static_cast<double>(event_shape_[0]);
  return -0.5 * (k * std::log(2 * std::numbers::pi) + m) - half_log_det();
}

Tensor MultivariateNormal::entropy() const {
  double k = static_cast<double>(event_shape_[0]);
  Tensor h = 0.5 * k * (1 + std::log(2 * std::numbers::pi)) + half_log_det();
  return h.expand(batch_shape_);
}

Tensor MultivariateNormal::variance() const {
  return tril_.square().sum({-1}).expand(with(batch_shape_, {event_shape_[0]}));
}

// ---- LowRankMultivariateNormal ------------------------------------------------------------

LowRankMultivariateNormal::LowRankMultivariateNormal(const Tensor& loc, const Tensor& cov_factor,
                                                     const Tensor& cov_diag, bool validate_args)
    : Distribution({}, {}, validate_args) {
  if (loc.dim() < 1) fail("[LowRankMultivariateNormal] loc must be at least one-dimensional");
  const int64_t n = loc.size(-1);
  if (cov_factor.dim() < 2)
    fail(
        "[LowRankMultivariateNormal] cov_factor must be at least two-dimensional, with optional leading batch "
        "dimensions");
  if (cov_factor.size(-2) != n)
    fail("[LowRankMultivariateNormal] cov_factor must be a batch of matrices with shape ", n, " x m, got ",
         shape_str(cov_factor.shape()));
  if (cov_diag.dim() < 1 || cov_diag.size(-1) != n)
    fail("[LowRankMultivariateNormal] cov_diag must be a batch of vectors with shape [", n, "], got ",
         shape_str(cov_diag.shape()));
  // Broadcast as columns beside cov_factor's, then the vectors taken back out (torch's).
  auto b = broadcast_tensors({loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)});
  loc_ = b[0].select(-1, 0), cov_factor_ = b[1], cov_diag_ = b[2].select(-1, 0);
  batch_shape_ = drop_last(loc_, 1);
  event_shape_ = {n};
  check_param("loc", loc_, constraints::independent(constraints::real(), 1));
  check_param("cov_factor", cov_factor_, constraints::independent(constraints::real(), 2));
  check_param("cov_diag", cov_diag_, constraints::independent(constraints::positive(), 1));
  const Tensor wt_dinv = cov_factor_.mT() / cov_diag_.unsqueeze(-2);
  const int64_t r = cov_factor_.size(-1);
  capacitance_tril_ = linalg::cholesky(wt_dinv.matmul(cov_factor_) + eye(r, {}, {loc_.dtype(), loc_.device()}));
}

Tensor LowRankMultivariateNormal::rsample(const Dims& sample_shape) const {
  const Dims shape = extended_shape(sample_shape);
  const Options opts{loc_.dtype(), loc_.device()};
  const Tensor eps_w = randn(concat(Dims(shape.begin(), shape.end() - 1), {cov_factor_.size(-1)}), opts);
  const Tensor eps_d = randn(shape, opts);
  return loc_ + cov_factor_.matmul(eps_w.unsqueeze(-1)).squeeze({-1}) + cov_diag_.sqrt() * eps_d;
}

Tensor LowRankMultivariateNormal::log_det() const {
  return 2 * capacitance_tril_.diagonal(0, -2, -1).log().sum({-1}) + cov_diag_.log().sum({-1});
}

Tensor LowRankMultivariateNormal::mahalanobis(const Tensor& x) const {
  // x^T D^-1 x - |C^-1 W^T D^-1 x|^2, C C^T the capacitance
  const Tensor wt_dinv_x = (cov_factor_.mT() / cov_diag_.unsqueeze(-2)).matmul(x.unsqueeze(-1)).squeeze({-1});
  return (x.square() / cov_diag_).sum({-1}) - batch_mahalanobis(capacitance_tril_, wt_dinv_x);
}

Tensor LowRankMultivariateNormal::log_prob(const Tensor& value) const {
  validate_sample(value);
  const double n = static_cast<double>(event_shape_[0]);
  return -0.5 * (n * std::log(2 * std::numbers::pi) + log_det() + mahalanobis(value - loc_));
}

Tensor LowRankMultivariateNormal::entropy() const {
  const double n = static_cast<double>(event_shape_[0]);
  return (0.5 * (n * (1 + std::log(2 * std::numbers::pi)) + log_det())).expand(batch_shape_);
}

Tensor LowRankMultivariateNormal::variance() const { return cov_factor_.square().sum({-1}) + cov_diag_; }

Tensor LowRankMultivariateNormal::covariance_matrix() const {
  return cov_factor_.matmul(cov_factor_.mT()) + diag_embed(cov_diag_);
}

Tensor LowRankMultivariateNormal::precision_matrix() const {
  // Woodbury: D^-1 - A^T A with A = C^-1 W^T D^-1
  const Tensor a = linalg::solve_triangular(capacitance_tril_, cov_factor_.mT() / cov_diag_.unsqueeze(-2), false);
  return diag_embed(cov_diag_.reciprocal()) - a.mT().matmul(a);
}

Tensor LowRankMultivariateNormal::scale_tril() const {
  // sqrt(D) chol(I + (D^-1/2 W)(D^-1/2 W)^T), whose conditioning is better than the covariance's
  const Tensor sqrt_d = cov_diag_.sqrt().unsqueeze(-1);
  const Tensor w = cov_factor_ / sqrt_d;
  const Tensor k = w.matmul(w.mT()) + eye(event_shape_[0], {}, {loc_.dtype(), loc_.device()});
  return sqrt_d * linalg::cholesky(k);
}

// ---- Independent -------------------------------------------------------------------------

Independent::Independent(std::shared_ptr<const Distribution> base, int64_t reinterpreted_batch_ndims,
                         bool validate_args)
    : Distribution({}, {}, validate_args), base_(std::move(base)), ndims_(reinterpreted_batch_ndims) {
  const Dims& bb = base_->batch_shape();
  if (ndims_ < 0 || ndims_ > static_cast<int64_t>(bb.size()))
    fail("[Independent] expected 0 <= reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual ", ndims_,
         " vs ", bb.size());
  batch_shape_ = Dims(bb.begin(), bb.end() - ndims_);
  event_shape_ = concat(Dims(bb.end() - ndims_, bb.end()), base_->event_shape());
}

}  // namespace ug::distributions
