#include "ug/distributions/continuous.h"

#include <limits>
#include <numbers>

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/random.h"
#include "ug/ops/random_distributions.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = std::numbers::pi;
constexpr double kEuler = std::numbers::egamma;

/** Draws of `shape` from Exponential(1) in t's dtype. */
Tensor standard_exponential(const Dims& shape, const Tensor& t) {
  Tensor e = empty(shape, like(t));
  exponential_(e);
  return e;
}

/** Polynomial coefficients (lowest first) of Abramowitz and Stegun's 9.8.1-9.8.4 for I0 and I1,
 *  below and above x = 3.75 (torch's VonMises uses the same). */
constexpr double kI0Small[] = {1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2};
constexpr double kI0Large[] = {0.39894228,    0.1328592e-1, 0.225319e-2,   -0.157565e-2, 0.916281e-2,
                               -0.2057706e-1, 0.2635537e-1, -0.1647633e-1, 0.392377e-2};
constexpr double kI1Small[] = {0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3};
constexpr double kI1Large[] = {0.39894228,   -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1,
                               0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2};

template <size_t N> Tensor horner(const Tensor& y, const double (&coef)[N]) {
  Tensor r = full_like(y, coef[N - 1]);
  for (size_t i = N - 1; i-- > 0;) r = r * y + coef[i];
  return r;
}

/** log I_order(x) for x > 0, order 0 or 1. */
Tensor log_bessel_i(const Tensor& x, int order) {
  const Tensor ys = (x / 3.75).square();
  Tensor small = order == 0 ? horner(ys, kI0Small) : x.abs() * horner(ys, kI1Small);
  const Tensor yl = 3.75 / x;
  const Tensor large = x - 0.5 * x.log() + (order == 0 ? horner(yl, kI0Large) : horner(yl, kI1Large)).log();
  return where(x.lt(3.75), small.log(), large);
}
}  // namespace

// ---- Cauchy ------------------------------------------------------------------------------

Tensor Cauchy::rsample(const Dims& sample_shape) const {
  Tensor eps = empty(extended_shape(sample_shape), like(loc_));
  cauchy_(eps);
  return loc_ + eps * scale_;
}

Tensor Cauchy::log_prob(const Tensor& value) const {
  validate_sample(value);
  return -std::log(kPi) - scale_.log() - ((value - loc_) / scale_).square().log1p();
}

Tensor Cauchy::entropy() const { return std::log(4 * kPi) + scale_.log(); }
Tensor Cauchy::mean() const { return full(extended_shape({}), kNaN, like(loc_)); }
Tensor Cauchy::variance() const { return full(extended_shape({}), kInf, like(loc_)); }

Tensor Cauchy::cdf(const Tensor& value) const {
  validate_sample(value);
  return ((value - loc_) / scale_).atan() / kPi + 0.5;
}

Tensor Cauchy::icdf(const Tensor& value) const { return (kPi * (value - 0.5)).tan() * scale_ + loc_; }

// ---- HalfCauchy, HalfNormal --------------------------------------------------------------

HalfCauchy::HalfCauchy(const Tensor& scale, bool validate_args)
    : Distribution(scale.shape(), {}, validate_args), base_(zeros_like(scale), scale, false) {
  check_param("scale", scale, constraints::positive());
}

Tensor HalfCauchy::log_prob(const Tensor& value) const {
  validate_sample(value);
  return where(value.ge(0), base_.log_prob(value) + std::log(2.0), -kInf);
}

Tensor HalfCauchy::mean() const { return full(extended_shape({}), kInf, like(scale())); }

Tensor HalfCauchy::cdf(const Tensor& value) const {
  validate_sample(value);
  return 2 * base_.cdf(value) - 1;
}

HalfNormal::HalfNormal(const Tensor& scale, bool validate_args)
    : Distribution(scale.shape(), {}, validate_args), base_(zeros_like(scale), scale, false) {
  check_param("scale", scale, constraints::positive());
}

Tensor HalfNormal::log_prob(const Tensor& value) const {
  validate_sample(value);
  return where(value.ge(0), base_.log_prob(value) + std::log(2.0), -kInf);
}

Tensor HalfNormal::cdf(const Tensor& value) const {
  validate_sample(value);
  return 2 * base_.cdf(value) - 1;
}

// ---- Gumbel ------------------------------------------------------------------------------

Tensor Gumbel::rsample(const Dims& sample_shape) const {
  Tensor u = empty(extended_shape(sample_shape), like(loc_));
  uniform_(u, tiny_of(loc_), 1 - eps_of(loc_));
  return loc_ - scale_ * (-u.log()).log();
}

Tensor Gumbel::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor z = (value - loc_) / scale_;
  return -(scale_.log() + z + (-z).exp());
}

Tensor Gumbel::entropy() const { return scale_.log() + (1 + kEuler); }
Tensor Gumbel::mean() const { return loc_ + scale_ * kEuler; }
Tensor Gumbel::stddev() const { return kPi / std::sqrt(6.0) * scale_; }

Tensor Gumbel::cdf(const Tensor& value) const {
  validate_sample(value);
  return (-(-(value - loc_) / scale_).exp()).exp();
}

Tensor Gumbel::icdf(const Tensor& value) const { return loc_ - scale_ * (-value.log()).log(); }

// ---- Weibull -----------------------------------------------------------------------------

Weibull::Weibull(const Tensor& scale, const Tensor& concentration, bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({scale, concentration});
  scale_ = b[0], concentration_ = b[1];
  batch_shape_ = scale_.shape();
  check_param("scale", scale_, constraints::positive());
  check_param("concentration", concentration_, constraints::positive());
}

Tensor Weibull::rsample(const Dims& sample_shape) const {
  return scale_ * standard_exponential(extended_shape(sample_shape), scale_).pow(concentration_.reciprocal());
}

Tensor Weibull::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor z = value / scale_;
  return (concentration_ / scale_).log() + (concentration_ - 1) * z.log() - z.pow(concentration_);
}

Tensor Weibull::entropy() const {
  const Tensor r = concentration_.reciprocal();
  return kEuler * (1 - r) + (scale_ * r).log() + 1;
}

Tensor Weibull::mean() const { return scale_ * lgamma(1 + concentration_.reciprocal()).exp(); }

Tensor Weibull::variance() const {
  const Tensor r = concentration_.reciprocal();
  return scale_.square() * (lgamma(1 + 2 * r).exp() - (2 * lgamma(1 + r)).exp());
}

Tensor Weibull::mode() const {
  return scale_ * ((concentration_ - 1) / concentration_).pow(concentration_.reciprocal());
}

Tensor Weibull::cdf(const Tensor& value) const {
  validate_sample(value);
  return -(-(value / scale_).pow(concentration_)).expm1();
}

Tensor Weibull::icdf(const Tensor& value) const {
  return scale_ * (-(-value).log1p()).pow(concentration_.reciprocal());
}

// ---- Pareto ------------------------------------------------------------------------------

Pareto::Pareto(const Tensor& scale, const Tensor& alpha, bool validate_args) : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({scale, alpha});
  scale_ = b[0], alpha_ = b[1];
  batch_shape_ = scale_.shape();
  check_param("scale", scale_, constraints::positive());
  check_param("alpha", alpha_, constraints::positive());
}

Tensor Pareto::rsample(const Dims& sample_shape) const {
  return scale_ * (standard_exponential(extended_shape(sample_shape), scale_) / alpha_).exp();
}

Tensor Pareto::log_prob(const Tensor& value) const {
  validate_sample(value);
  return alpha_.log() + alpha_ * scale_.log() - (alpha_ + 1) * value.log();
}

Tensor Pareto::entropy() const { return (scale_ / alpha_).log() + (1 + alpha_.reciprocal()); }

Tensor Pareto::mean() const {
  const Tensor a = alpha_.clamp(Scalar(1), std::nullopt);  // a / (a - 1) is inf at 1
  return a * scale_ / (a - 1);
}

Tensor Pareto::variance() const {
  const Tensor a = alpha_.clamp(Scalar(2), std::nullopt);
  return scale_.square() * a / ((a - 1).square() * (a - 2));
}

Tensor Pareto::cdf(const Tensor& value) const {
  validate_sample(value);
  return -(-alpha_ * (value / scale_).log()).expm1();
}

Tensor Pareto::icdf(const Tensor& value) const { return scale_ * (-(-value).log1p() / alpha_).exp(); }

// ---- Kumaraswamy -------------------------------------------------------------------------

Kumaraswamy::Kumaraswamy(const Tensor& concentration1, const Tensor& concentration0, bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({concentration1, concentration0});
  c1_ = b[0], c0_ = b[1];
  batch_shape_ = c1_.shape();
  check_param("concentration1", c1_, constraints::positive());
  check_param("concentration0", c0_, constraints::positive());
}

Tensor Kumaraswamy::rsample(const Dims& sample_shape) const {
  const Tensor u = rand(extended_shape(sample_shape), like(c1_));
  return (1 - u.pow(c0_.reciprocal())).pow(c1_.reciprocal());
}

Tensor Kumaraswamy::log_prob(const Tensor& value) const {
  validate_sample(value);
  return c1_.log() + c0_.log() + (c1_ - 1) * value.log() + (c0_ - 1) * (-value.pow(c1_)).log1p();
}

Tensor Kumaraswamy::entropy() const {
  const Tensor t1 = 1 - c1_.reciprocal(), t0 = 1 - c0_.reciprocal();
  return t0 + t1 * (digamma(c0_ + 1) + kEuler) - c1_.log() - c0_.log();
}

Tensor Kumaraswamy::moment(int n) const {
  const Tensor a = 1 + static_cast<double>(n) / c1_;
  return c0_ * (lgamma(a) + lgamma(c0_) - lgamma(a + c0_)).exp();
}

Tensor Kumaraswamy::mode() const {
  // torch's formula takes log1p(-b), NaN for every b > 1: this is the closed form.
  const Tensor m = ((c1_ - 1) / (c1_ * c0_ - 1)).pow(c1_.reciprocal());
  return where(c1_.lt(1).logical_or(c0_.lt(1)), kNaN, m);
}

Tensor Kumaraswamy::cdf(const Tensor& value) const {
  validate_sample(value);
  return 1 - (c0_ * (-value.pow(c1_)).log1p()).exp();
}

Tensor Kumaraswamy::icdf(const Tensor& value) const {
  return (1 - (1 - value).pow(c0_.reciprocal())).pow(c1_.reciprocal());
}

// ---- VonMises ----------------------------------------------------------------------------

VonMises::VonMises(const Tensor& loc, const Tensor& concentration, bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({loc, concentration});
  loc_ = b[0], concentration_ = b[1];
  batch_shape_ = loc_.shape();
  check_param("loc", loc_, constraints::real());
  check_param("concentration", concentration_, constraints::positive());
}

Tensor VonMises::log_prob(const Tensor& value) const {
  validate_sample(value);
  return concentration_ * (value - loc_).cos() - std::log(2 * kPi) - log_bessel_i(concentration_, 0);
}

Tensor VonMises::variance() const {
  return 1 - (log_bessel_i(concentration_, 1) - log_bessel_i(concentration_, 0)).exp();
}

Tensor VonMises::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  // float64 throughout: in float32 the acceptance test stalls for concentrations below ~1e-4.
  const Tensor k = concentration_.to(DType::Float64), loc = loc_.to(DType::Float64);
  const Tensor tau = 1 + (1 + 4 * k.square()).sqrt();
  const Tensor rho = (tau - (2 * tau).sqrt()) / (2 * k);
  // The proposal's r, by its Taylor expansion where rho underflows.
  const Tensor r = where(k.lt(1e-5), k.reciprocal() + k, (1 + rho.square()) / (2 * rho));
  const Dims shape = extended_shape(sample_shape);
  Tensor x = zeros(shape, like(k)), done = zeros(shape, {DType::Bool, k.device()});
  while (!done.all().item<bool>()) {
    const Tensor u = rand(concat({3}, shape), like(k));
    const Tensor u1 = u.select(0, 0), u2 = u.select(0, 1), u3 = u.select(0, 2);
    const Tensor z = (kPi * u1).cos();
    const Tensor f = (1 + r * z) / (r + z);
    const Tensor c = k * (r - f);
    const Tensor accept =
        (c * (2 - c) - u2).gt(0).logical_or(((c / u2).log() + 1 - c).ge(0)).logical_and(done.logical_not());
    x = where(accept, (u3 - 0.5).sign() * f.acos(), x);
    done = done.logical_or(accept);
  }
  return ((x + kPi + loc).remainder(2 * kPi) - kPi).to(loc_.dtype());
}

// ---- GeneralizedPareto -------------------------------------------------------------------

GeneralizedPareto::GeneralizedPareto(const Tensor& loc, const Tensor& scale, const Tensor& concentration,
                                     bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({loc, scale, concentration});
  loc_ = b[0], scale_ = b[1], concentration_ = b[2];
  batch_shape_ = loc_.shape();
  check_param("loc", loc_, constraints::real());
  check_param("scale", scale_, constraints::positive());
  check_param("concentration", concentration_, constraints::real());
}

Tensor GeneralizedPareto::rsample(const Dims& sample_shape) const {
  return icdf(rand(extended_shape(sample_shape), like(loc_)));
}

Tensor GeneralizedPareto::log_survival(const Tensor& value) const {
  const Tensor z = (value - loc_) / scale_;
  const Tensor zero = concentration_.eq(0);
  const Tensor c = where(zero, 1.0, concentration_);  // keeps the other branch finite
  return where(zero, -z, -(c * z).log1p() / c);
}

Tensor GeneralizedPareto::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor z = (value - loc_) / scale_;
  const Tensor zero = concentration_.eq(0);
  const Tensor c = where(zero, 1.0, concentration_);
  return -scale_.log() - where(zero, z, (c.reciprocal() + 1) * (c * z).log1p());
}

Tensor GeneralizedPareto::mean() const {
  const Tensor ok = concentration_.lt(1);
  return where(ok, loc_ + scale_ / (1 - where(ok, concentration_, 0.5)), kNaN);
}

Tensor GeneralizedPareto::variance() const {
  const Tensor ok = concentration_.lt(0.5);
  const Tensor c = where(ok, concentration_, 0.25);
  return where(ok, scale_.square() / ((1 - c).square() * (1 - 2 * c)), kNaN);
}

Tensor GeneralizedPareto::cdf(const Tensor& value) const {
  validate_sample(value);
  return -log_survival(value).expm1();
}

Tensor GeneralizedPareto::icdf(const Tensor& value) const {
  const Tensor zero = concentration_.eq(0);
  const Tensor c = where(zero, 1.0, concentration_);
  const Tensor log_u = (-value).log1p();
  return where(zero, loc_ - scale_ * log_u, loc_ + scale_ / c * (-c * log_u).expm1());
}

Constraint GeneralizedPareto::support() const {
  const Tensor upper = where(concentration_.lt(0), loc_ - scale_ / concentration_, kInf);
  return constraints::interval(loc_, upper);
}

// ---- ContinuousBernoulli -----------------------------------------------------------------

namespace {
constexpr double kLow = 0.499, kHigh = 0.501;  // torch's lims: the unstable region around 1/2
}  // namespace

ContinuousBernoulli::ContinuousBernoulli(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                                         bool validate_args)
    : ProbsOrLogits("ContinuousBernoulli", probs, logits, validate_args) {
  set_elementwise(probs, logits);
  probs_ = clamp_probs(probs_);
  batch_shape_ = probs_.shape();
}

Tensor ContinuousBernoulli::stable() const { return probs_.le(kLow).logical_or(probs_.gt(kHigh)); }

Tensor ContinuousBernoulli::cut_probs() const { return where(stable(), probs_, kLow); }

Tensor ContinuousBernoulli::log_norm() const {
  const Tensor p = cut_probs();
  const Tensor below = p.le(0.5);
  const Tensor exact = ((-p).log1p() - p.log()).abs().log() -
                       where(below, (-2 * where(below, p, 0.0)).log1p(), (2 * where(below, 1.0, p) - 1).log());
  const Tensor x = (probs_ - 0.5).square();
  const Tensor taylor = std::log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x;
  return where(stable(), exact, taylor);
}

Tensor ContinuousBernoulli::rsample(const Dims& sample_shape) const {
  return icdf(rand(extended_shape(sample_shape), like(probs_)));
}

Tensor ContinuousBernoulli::log_prob(const Tensor& value) const {
  validate_sample(value);
  // -binary_cross_entropy_with_logits(logits, value) = x l - softplus(l)
  return value * logits_ - logits_.logaddexp(0) + log_norm();
}

Tensor ContinuousBernoulli::entropy() const {
  const Tensor log0 = (-probs_).log1p(), log1 = probs_.log();
  return mean() * (log0 - log1) - log_norm() - log0;
}

Tensor ContinuousBernoulli::mean() const {
  const Tensor p = cut_probs();
  const Tensor exact = p / (2 * p - 1) + ((-p).log1p() - p.log()).reciprocal();
  const Tensor x = probs_ - 0.5;
  return where(stable(), exact, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.square()) * x);
}

Tensor ContinuousBernoulli::variance() const {
  const Tensor p = cut_probs();
  const Tensor exact = p * (p - 1) / (1 - 2 * p).square() + ((-p).log1p() - p.log()).square().reciprocal();
  const Tensor x = (probs_ - 0.5).square();
  return where(stable(), exact, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x);
}

Tensor ContinuousBernoulli::cdf(const Tensor& value) const {
  validate_sample(value);
  const Tensor p = cut_probs();
  const Tensor exact = (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1);
  const Tensor inside = where(stable(), exact, value);
  return where(value.le(0), 0.0, where(value.ge(1), 1.0, inside));
}

Tensor ContinuousBernoulli::icdf(const Tensor& value) const {
  const Tensor p = cut_probs();
  const Tensor exact = ((-p + value * (2 * p - 1)).log1p() - (-p).log1p()) / (p.log() - (-p).log1p());
  return where(stable(), exact, value);
}

}  // namespace ug::distributions
