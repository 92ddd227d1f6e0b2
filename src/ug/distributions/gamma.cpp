#include "ug/distributions/gamma.h"

#include <limits>

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/composite.h"
#include "ug/ops/random_distributions.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
/** The smallest normal number of t's dtype: torch keeps draws above it (their log stays finite). */
Scalar tiny(const Tensor& t) {
  return t.dtype() == DType::Float64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
}
}  // namespace

// ---- Gamma -------------------------------------------------------------------------------

Gamma::Gamma(const Tensor& concentration, const Tensor& rate, bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({concentration, rate});
  concentration_ = b[0], rate_ = b[1];
  batch_shape_ = concentration_.shape();
  check_param("concentration", concentration_, constraints::positive());
  check_param("rate", rate_, constraints::positive());
}

Tensor Gamma::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  Tensor g = random::gamma(global_key(), concentration_, extended_shape(sample_shape), concentration_.dtype());
  return (g / rate_).clamp(tiny(g), std::nullopt);
}

Tensor Gamma::log_prob(const Tensor& value) const {
  validate_sample(value);
  return xlogy(concentration_, rate_) + xlogy(concentration_ - 1, value) - rate_ * value - lgamma(concentration_);
}

Tensor Gamma::entropy() const {
  const Tensor& c = concentration_;
  return c - rate_.log() + lgamma(c) + (1 - c) * digamma(c);
}

Tensor Gamma::mean() const { return concentration_ / rate_; }
Tensor Gamma::variance() const { return concentration_ / rate_.square(); }

// ---- Beta --------------------------------------------------------------------------------

Beta::Beta(const Tensor& concentration1, const Tensor& concentration0, bool validate_args)
    : Distribution({}, {}, validate_args) {
  auto b = broadcast_tensors({concentration1, concentration0});
  c1_ = b[0], c0_ = b[1];
  batch_shape_ = c1_.shape();
  check_param("concentration1", c1_, constraints::positive());
  check_param("concentration0", c0_, constraints::positive());
}

Tensor Beta::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  return random::beta(global_key(), c1_, c0_, extended_shape(sample_shape), c1_.dtype());
}

Tensor Beta::log_prob(const Tensor& value) const {
  validate_sample(value);
  return xlogy(c1_ - 1, value) + xlogy(c0_ - 1, 1 - value) + lgamma(c1_ + c0_) - lgamma(c1_) - lgamma(c0_);
}

Tensor Beta::entropy() const {
  Tensor total = c1_ + c0_;
  return lgamma(c1_) + lgamma(c0_) - lgamma(total) + (total - 2) * digamma(total) - (c1_ - 1) * digamma(c1_) -
         (c0_ - 1) * digamma(c0_);
}

Tensor Beta::mean() const { return c1_ / (c1_ + c0_); }
Tensor Beta::variance() const {
  Tensor total = c1_ + c0_;
  return c1_ * c0_ / (total.square() * (total + 1));
}

}  // namespace ug::distributions
