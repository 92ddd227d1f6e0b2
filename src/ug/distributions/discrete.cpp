#include "ug/distributions/discrete.h"

#include <limits>

#include "ug/core/error.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/composite.h"
#include "ug/ops/random.h"
#include "ug/ops/random_distributions.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
/** max(l, 0) - l v + log1p(exp(-|l|)): binary cross-entropy with logits, stable for any l. */
Tensor bce_with_logits(const Tensor& logits, const Tensor& target) {
  return logits.relu() - logits * target + (-logits.abs()).exp().log1p();
}

/** log sigmoid(x) = -log(1 + e^-x), stable for either sign. */
Tensor log_sigmoid(const Tensor& x) { return -(-x).logaddexp(0); }
}  // namespace

Tensor clamp_probs(const Tensor& probs) {
  double eps =
      probs.dtype() == DType::Float64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  return probs.clamp(Scalar(eps), Scalar(1 - eps));
}

ProbsOrLogits::ProbsOrLogits(const char* dist, const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                             bool validate_args)
    : Distribution({}, {}, validate_args), from_logits_(logits.has_value()) {
  if (probs.has_value() == logits.has_value())
    fail("[", dist, "] either `probs` or `logits` must be specified, but not both");
}

void ProbsOrLogits::set_elementwise(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                                    const Constraint& probs_in) {
  if (from_logits_) {
    logits_ = *logits;
    probs_ = logits_.sigmoid();
    check_param("logits", logits_, constraints::real());
  } else {
    probs_ = *probs;
    Tensor p = clamp_probs(probs_);
    logits_ = p.log() - (-p).log1p();
    check_param("probs", probs_, probs_in);
  }
}

// ---- Bernoulli ---------------------------------------------------------------------------

Bernoulli::Bernoulli(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits, bool validate_args)
    : ProbsOrLogits("Bernoulli", probs, logits, validate_args) {
  set_elementwise(probs, logits);
  batch_shape_ = probs_.shape();
}

Tensor Bernoulli::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  return bernoulli(probs_.expand(extended_shape(sample_shape)).contiguous());
}

Tensor Bernoulli::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto b = broadcast_tensors({logits_, value});
  return -bce_with_logits(b[0], b[1]);
}

Tensor Bernoulli::entropy() const { return bce_with_logits(logits_, probs_); }

Tensor Bernoulli::variance() const { return probs_ * (1 - probs_); }
Tensor Bernoulli::mode() const {
  return where(probs_.eq(0.5), std::numeric_limits<double>::quiet_NaN(), probs_.gt(0.5).to(probs_.dtype()));
}

// ---- Binomial ----------------------------------------------------------------------------

Binomial::Binomial(const Tensor& total_count, const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                   bool validate_args)
    : ProbsOrLogits("Binomial", probs, logits, validate_args) {
  const Tensor& given = from_logits_ ? *logits : *probs;
  auto b = broadcast_tensors({total_count.to(given.dtype()), given});
  total_count_ = b[0];
  set_elementwise(from_logits_ ? std::nullopt : std::optional<Tensor>(b[1]),
                  from_logits_ ? std::optional<Tensor>(b[1]) : std::nullopt);
  batch_shape_ = probs_.shape();
  check_param("total_count", total_count_, constraints::nonnegative_integer());
}

std::vector<std::pair<std::string, Tensor>> Binomial::params() const {
  auto p = ProbsOrLogits::params();
  p.insert(p.begin(), {"total_count", total_count_});
  return p;
}

Constraint Binomial::support() const {
  const Tensor n = total_count_;
  return {"IntegerInterval(lower_bound=0, upper_bound=total_count)",
          [n](const Tensor& x) { return x.remainder(1).eq(0).logical_and(x.ge(0)).logical_and(x.le(n)); }};
}

Tensor Binomial::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  const Dims shape = extended_shape(sample_shape);
  return binomial(total_count_.expand(shape).contiguous(), probs_.expand(shape).contiguous());
}

Tensor Binomial::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor& n = total_count_;
  // n log(1 + e^l) - log n!, stable for either sign of the logits l
  const Tensor normalizer = n * logits_.clamp(0, std::nullopt) + n * (-logits_.abs()).exp().log1p() - lgamma(n + 1);
  return value * logits_ - lgamma(value + 1) - lgamma(n - value + 1) - normalizer;
}

Tensor Binomial::mode() const {
  const Tensor m = ((total_count_ + 1) * probs_).floor();
  return where(m.gt(total_count_), total_count_, m);
}

// ---- Multinomial -------------------------------------------------------------------------

Multinomial::Multinomial(int64_t total_count, const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                         bool validate_args)
    : Distribution({}, {}, validate_args), categorical_(probs, logits, validate_args), total_count_(total_count) {
  if (total_count < 0) fail("[Multinomial] total_count must be non-negative, got ", total_count);
  batch_shape_ = categorical_.batch_shape();
  event_shape_ = {categorical_.num_events()};
}

Constraint Multinomial::support() const {
  const int64_t n = total_count_;
  return {"Multinomial(upper_bound=" + std::to_string(n) + ")", [n](const Tensor& x) {
            return x.remainder(1).eq(0).logical_and(x.ge(0)).all(-1).logical_and(x.sum({-1}).le(n));
          }};
}

Tensor Multinomial::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  const Tensor index = categorical_.sample(concat({total_count_}, sample_shape)).unsqueeze(-1);
  const Tensor& p = probs();
  return index.eq(arange(categorical_.num_events(), {DType::Int64, p.device()})).to(p.dtype()).sum({0});
}

Tensor Multinomial::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto b = broadcast_tensors({logits(), value});
  // 0 log 0 is 0, where a category has probability 0 and no count
  const Tensor l = where(b[1].eq(0).logical_and(b[0].eq(-std::numeric_limits<double>::infinity())), 0.0, b[0]);
  return lgamma(b[1].sum({-1}) + 1) - lgamma(b[1] + 1).sum({-1}) + (l * b[1]).sum({-1});
}

// ---- Categorical -------------------------------------------------------------------------

Categorical::Categorical(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits, bool validate_args)
    : ProbsOrLogits("Categorical", probs, logits, validate_args) {
  const Tensor& given = from_logits_ ? *logits : *probs;
  if (given.dim() < 1)
    fail("[Categorical] `", from_logits_ ? "logits" : "probs", "` parameter must be at least one-dimensional");
  if (from_logits_) {
    logits_ = given - given.logsumexp({-1}, true);
    probs_ = logits_.softmax(-1);
    check_param("logits", logits_, constraints::independent(constraints::real(), 1));
  } else {
    probs_ = given / given.sum({-1}, true);
    logits_ = clamp_probs(probs_).log();
    check_param("probs", probs_, constraints::simplex());
  }
  batch_shape_ = Dims(given.shape().begin(), given.shape().end() - 1);
}

Tensor Categorical::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  int64_t n = 1;
  for (int64_t s : sample_shape) n *= s;
  Tensor rows = multinomial(probs_.reshape({-1, num_events()}), n, true);
  return rows.t().reshape(extended_shape(sample_shape));
}

Tensor Categorical::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto b = broadcast_tensors({value.to(DType::Int64).unsqueeze(-1), logits_});
  return b[1].gather(-1, b[0].narrow(-1, 0, 1).contiguous()).squeeze({-1});
}

Tensor Categorical::entropy() const {
  double min_real =
      probs_.dtype() == DType::Float64 ? std::numeric_limits<double>::lowest() : std::numeric_limits<float>::lowest();
  return -(logits_.clamp(Scalar(min_real), std::nullopt) * probs_).sum({-1});
}

Tensor Categorical::mean() const {
  return full(extended_shape({}), std::numeric_limits<double>::quiet_NaN(), {probs_.dtype(), probs_.device()});
}

// ---- OneHotCategorical -------------------------------------------------------------------

OneHotCategorical::OneHotCategorical(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits,
                                     bool validate_args)
    : Distribution({}, {}, validate_args), categorical_(probs, logits, validate_args) {
  batch_shape_ = categorical_.batch_shape();
  event_shape_ = {categorical_.num_events()};
}

std::vector<std::pair<std::string, Tensor>> OneHotCategorical::categorical_params() const {
  return categorical_.params();
}

Tensor OneHotCategorical::sample(const Dims& sample_shape) const {
  Tensor index = categorical_.sample(sample_shape).unsqueeze(-1);
  const Tensor& p = categorical_.probs();
  return index.eq(arange(categorical_.num_events(), {DType::Int64, p.device()})).to(p.dtype());
}

Tensor OneHotCategorical::mode() const {
  const Tensor& p = categorical_.probs();
  return categorical_.mode()
      .unsqueeze(-1)
      .eq(arange(categorical_.num_events(), {DType::Int64, p.device()}))
      .to(p.dtype());
}

Tensor OneHotCategorical::log_prob(const Tensor& value) const {
  validate_sample(value);
  return categorical_.log_prob(value.argmax(-1));
}

// ---- Poisson -----------------------------------------------------------------------------

Poisson::Poisson(const Tensor& rate, bool validate_args) : Distribution(rate.shape(), {}, validate_args), rate_(rate) {
  check_param("rate", rate_, constraints::nonnegative());
}

Tensor Poisson::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  return poisson(rate_.expand(extended_shape(sample_shape)).contiguous());
}

Tensor Poisson::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto b = broadcast_tensors({rate_, value});
  return xlogy(b[1], b[0]) - b[0] - lgamma(b[1] + 1);
}

// ---- Geometric ---------------------------------------------------------------------------

Geometric::Geometric(const std::optional<Tensor>& probs, const std::optional<Tensor>& logits, bool validate_args)
    : ProbsOrLogits("Geometric", probs, logits, validate_args) {
  set_elementwise(probs, logits);
  batch_shape_ = probs_.shape();
  if (!from_logits_) check_param("probs", probs_, constraints::positive());
}

Tensor Geometric::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  Tensor u = empty(extended_shape(sample_shape), like(probs_));
  uniform_(u, tiny_of(probs_), 1);
  return (u.log() / (-probs_).log1p()).floor();
}

Tensor Geometric::log_prob(const Tensor& value) const {
  validate_sample(value);
  // 0 log 0 is 0: a certain success has no failures before it.
  const Tensor p = where(probs_.eq(1).logical_and(value.eq(0)), 0.0, probs_);
  return value * (-p).log1p() + probs_.log();
}

Tensor Geometric::entropy() const { return bce_with_logits(logits_, probs_) / probs_; }

// ---- NegativeBinomial --------------------------------------------------------------------

NegativeBinomial::NegativeBinomial(const Tensor& total_count, const std::optional<Tensor>& probs,
                                   const std::optional<Tensor>& logits, bool validate_args)
    : ProbsOrLogits("NegativeBinomial", probs, logits, validate_args) {
  const Tensor& given = from_logits_ ? *logits : *probs;
  auto b = broadcast_tensors({total_count.to(given.dtype()), given});
  total_count_ = b[0];
  set_elementwise(from_logits_ ? std::nullopt : std::optional<Tensor>(b[1]),
                  from_logits_ ? std::optional<Tensor>(b[1]) : std::nullopt, constraints::half_open_unit_interval());
  batch_shape_ = probs_.shape();
  check_param("total_count", total_count_, constraints::nonnegative());
}

std::vector<std::pair<std::string, Tensor>> NegativeBinomial::params() const {
  auto p = ProbsOrLogits::params();
  p.insert(p.begin(), {"total_count", total_count_});
  return p;
}

Tensor NegativeBinomial::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  const Dims shape = extended_shape(sample_shape);
  // Gamma(0) is a point mass at 0: drawn as Gamma(tiny), which underflows to it.
  const Tensor concentration = total_count_.clamp(Scalar(tiny_of(total_count_)), std::nullopt);
  return poisson(standard_gamma(concentration.expand(shape).contiguous()) * logits_.exp());
}

Tensor NegativeBinomial::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor& n = total_count_;
  const Tensor unnormalized = n * log_sigmoid(-logits_) + value * log_sigmoid(logits_);
  const Tensor normalization = -lgamma(n + value) + lgamma(1 + value) + lgamma(n);
  return unnormalized - where((n + value).eq(0), 0.0, normalization);
}

Tensor NegativeBinomial::mode() const {
  return ((total_count_ - 1) * logits_.exp()).floor().clamp(Scalar(0), std::nullopt);
}

}  // namespace ug::distributions
