#include "ug/distributions/matrix.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "ug/core/error.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
const double kLog2 = std::log(2.0);

Tensor trailing_matrix(const Tensor& t) { return t.unsqueeze(-1).unsqueeze(-1); }
}  // namespace

Tensor mvdigamma(const Tensor& x, int64_t p) { return digamma(x.unsqueeze(-1) - arange(p, like(x)) / 2).sum({-1}); }

// ---- LKJCholesky -------------------------------------------------------------------------

LKJCholesky::LKJCholesky(int64_t dim, const Tensor& concentration, bool validate_args)
    : Distribution(concentration.shape(), {dim, dim}, validate_args), dim_(dim), concentration_(concentration) {
  if (dim < 2) fail("[LKJCholesky] Expected dim to be an integer greater than or equal to 2. Found dim=", dim, ".");
  check_param("concentration", concentration_, constraints::positive());
}

Tensor LKJCholesky::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  // The onion method (Lewandowski, Kurowicka and Joe 2009, 3.2): row i >= 1's squared norm
  // below the diagonal is Beta(i / 2, c + (dim - 1 - i) / 2), its direction uniform on the
  // sphere, the diagonal the rest of a unit row. torch draws Beta(i - 1/2, ...): off-diagonal
  // correlations past the first row then spread wider than LKJ's.
  const Tensor k = arange(dim_, like(concentration_)).clamp(Scalar(1), std::nullopt);  // row 0: any, zeroed
  const Tensor marginal = concentration_ + 0.5 * static_cast<double>(dim_ - 2);
  const Beta beta(k / 2, marginal.unsqueeze(-1) - (k - 1) / 2, false);
  const Tensor y = beta.sample(sample_shape).unsqueeze(-1);
  const Tensor normal = tril(randn(extended_shape(sample_shape), like(concentration_)), -1);
  const Tensor first_row = arange(dim_, {.dtype = DType::Int64}).eq(0).unsqueeze(-1);
  const Tensor direction = where(first_row, 0.0, normal / normal.norm(2, Dims{-1}, true));  // row 0 is 0/0
  const Tensor w = y.sqrt() * direction;
  const Tensor diag = (1 - w.square().sum({-1})).clamp(Scalar(tiny_of(w)), std::nullopt).sqrt();
  return w + diag_embed(diag);
}

Tensor LKJCholesky::log_prob(const Tensor& value) const {
  validate_sample(value);
  const auto d = static_cast<double>(dim_);
  const Tensor diag = value.diagonal(0, -2, -1).narrow(-1, 1, dim_ - 1);
  const Tensor order = 2 * (concentration_ - 1).unsqueeze(-1) + d - arange(2, dim_ + 1, 1, like(concentration_));
  const Tensor unnormalized = (order * diag.log()).sum({-1});
  // The normaliser (Lewandowski, Kurowicka and Joe 2009, p. 1999); mvlgamma's pi term is
  // (d - 1)(d - 2)/4 log pi where theirs is d (d - 1)/4 log pi.
  const double dm1 = d - 1;
  const Tensor alpha = concentration_ + 0.5 * dm1;
  const Tensor normalizer =
      0.5 * dm1 * std::log(std::numbers::pi) + mvlgamma(alpha - 0.5, dim_ - 1) - lgamma(alpha) * dm1;
  return unnormalized - normalizer;
}

// ---- Wishart -----------------------------------------------------------------------------

Wishart::Wishart(const Tensor& df, const std::optional<Tensor>& covariance_matrix,
                 const std::optional<Tensor>& precision_matrix, const std::optional<Tensor>& scale_tril,
                 bool validate_args)
    : Distribution({}, {}, validate_args) {
  if (int(covariance_matrix.has_value()) + int(precision_matrix.has_value()) + int(scale_tril.has_value()) != 1)
    fail("[Wishart] Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.");
  given_ = covariance_matrix ? "covariance_matrix" : precision_matrix ? "precision_matrix" : "scale_tril";
  given_value_ = covariance_matrix ? *covariance_matrix : precision_matrix ? *precision_matrix : *scale_tril;
  const Tensor& m = given_value_;
  if (m.dim() < 2)
    fail("[Wishart] ", given_, " must be at least two-dimensional, with optional leading batch dimensions");
  const int64_t p = m.size(-1);
  batch_shape_ = broadcast_shapes({Dims(m.shape().begin(), m.shape().end() - 2), df.shape()});
  event_shape_ = {m.size(-2), p};
  df_ = df.to(m.dtype()).expand(batch_shape_);  // one dtype for the matrix products
  check_param("df", df_, constraints::greater_than(full({}, static_cast<double>(p - 1), like(df_))));
  if (scale_tril) {
    check_param("scale_tril", m, constraints::lower_cholesky());
    tril_ = m;
  } else {
    check_param(given_, m, constraints::positive_definite());
    tril_ = linalg::cholesky(covariance_matrix ? m : linalg::inv(m));
  }
}

std::vector<std::pair<std::string, Tensor>> Wishart::params() const { return {{"df", df_}, {given_, given_value_}}; }

std::shared_ptr<Distribution> Wishart::expand(const Dims& batch_shape) const {
  const Tensor m = given_value_.expand(concat(batch_shape, event_shape_));
  const Tensor df = df_.expand(batch_shape);
  if (given_ == "covariance_matrix")
    return std::make_shared<Wishart>(df, m, std::nullopt, std::nullopt, validate_args_);
  if (given_ == "precision_matrix") return std::make_shared<Wishart>(df, std::nullopt, m, std::nullopt, validate_args_);
  return std::make_shared<Wishart>(df, std::nullopt, std::nullopt, m, validate_args_);
}

Tensor Wishart::scale_tril() const { return tril_.expand(concat(batch_shape_, event_shape_)); }
Tensor Wishart::covariance_matrix() const {
  return tril_.matmul(tril_.mT()).expand(concat(batch_shape_, event_shape_));
}
Tensor Wishart::precision_matrix() const {
  const Tensor eye_p = eye(event_shape_.back(), std::nullopt, like(tril_));
  return cholesky_solve(eye_p, tril_).expand(concat(batch_shape_, event_shape_));
}
Tensor Wishart::df_matrix() const { return trailing_matrix(df_); }

Tensor Wishart::bartlett(const Dims& sample_shape) const {
  const int64_t p = event_shape_.back();
  const Chi2 chi2(df_.unsqueeze(-1) - arange(p, like(df_)), false);
  const Tensor diag = chi2.rsample(sample_shape).sqrt().clamp(Scalar(eps_of(df_)), std::nullopt);
  const Tensor noise = tril(randn(extended_shape(sample_shape), like(df_)), -1) + diag_embed(diag);
  const Tensor chol = tril_.matmul(noise);
  return chol.matmul(chol.mT());
}

Tensor Wishart::rsample(const Dims& sample_shape) const {
  Tensor x = bartlett(sample_shape);
  // Draws with df near dim - 1 can be singular: redraw those (torch tests the opposite of this
  // the first time, so it warns of and redraws every draw).
  for (int attempt = 0; attempt < 10; ++attempt) {
    Tensor singular;
    {
      NoGradGuard no_grad;
      singular = support().check(x).logical_not();
    }
    if (!singular.any().item<bool>()) break;
    x = where(trailing_matrix(singular), bartlett(sample_shape), x);
  }
  return x;
}

Tensor Wishart::log_prob(const Tensor& value) const {
  validate_sample(value);
  const auto p = static_cast<double>(event_shape_.back());
  const Tensor half_log_det = tril_.diagonal(0, -2, -1).log().sum({-1});
  const Tensor trace = cholesky_solve(value, tril_).diagonal(0, -2, -1).sum({-1});
  return -df_ * (p * kLog2 / 2 + half_log_det) - mvlgamma(df_ / 2, event_shape_.back()) +
         (df_ - p - 1) / 2 * linalg::slogdet(value).logabsdet - trace / 2;
}

Tensor Wishart::entropy() const {
  const int64_t n = event_shape_.back();
  const auto p = static_cast<double>(n);
  const Tensor half_log_det = tril_.diagonal(0, -2, -1).log().sum({-1});
  const Tensor half_df = df_ / 2;
  return (p + 1) * (p * kLog2 / 2 + half_log_det) + mvlgamma(half_df, n) - (df_ - p - 1) / 2 * mvdigamma(half_df, n) +
         df_ * p / 2;
}

Tensor Wishart::mean() const { return df_matrix() * covariance_matrix(); }

Tensor Wishart::mode() const {
  const Tensor factor = df_ - static_cast<double>(event_shape_.back()) - 1;
  return trailing_matrix(where(factor.le(0), std::numeric_limits<double>::quiet_NaN(), factor)) * covariance_matrix();
}

Tensor Wishart::variance() const {
  const Tensor v = covariance_matrix();
  const Tensor diag = v.diagonal(0, -2, -1);
  return df_matrix() * (v.square() + diag.unsqueeze(-1) * diag.unsqueeze(-2));
}

}  // namespace ug::distributions
