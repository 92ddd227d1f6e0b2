#include "ug/distributions/transformed.h"

#include <limits>

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
/** x kept inside [tiny, 1 - eps] of its dtype. */
Tensor clip_unit(const Tensor& x) {
  const bool f64 = x.dtype() == DType::Float64;
  const double tiny = f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  const double eps = f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  return x.clamp(Scalar(tiny), Scalar(1 - eps));
}
}  // namespace

Tensor AffineTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return scale_.abs().log().expand(broadcast_shapes({x.shape(), scale_.shape()}));
}

Dims AffineTransform::forward_shape(const Dims& shape) const {
  return broadcast_shapes({shape, loc_.shape(), scale_.shape()});
}

Tensor SigmoidTransform::forward(const Tensor& x) const { return clip_unit(x.sigmoid()); }

Tensor SigmoidTransform::inverse(const Tensor& y) const {
  const Tensor p = clip_unit(y);
  return p.log() - (-p).log1p();
}

Tensor SigmoidTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  // log sigmoid'(x) = -softplus(-x) - softplus(x)
  return -(-x).logaddexp(0) - x.logaddexp(0);
}

TransformedDistribution::TransformedDistribution(std::shared_ptr<const Distribution> base, Transforms transforms,
                                                 bool validate_args)
    : Distribution(base->batch_shape(), base->event_shape(), validate_args),
      base_(std::move(base)),
      transforms_(std::move(transforms)) {
  Dims shape = concat(batch_shape_, event_shape_);
  for (const auto& t : transforms_) shape = t->forward_shape(shape);
  batch_shape_ = Dims(shape.begin(), shape.end() - static_cast<int64_t>(event_shape_.size()));
  // Parameters of the transforms may widen the batch: the base then draws that many (torch's).
  if (batch_shape_ != base_->batch_shape()) base_ = base_->expand(batch_shape_);
}

Tensor TransformedDistribution::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  Tensor x = base_->sample(sample_shape);
  for (const auto& t : transforms_) x = t->forward(x);
  return x;
}

Tensor TransformedDistribution::rsample(const Dims& sample_shape) const {
  Tensor x = base_->rsample(sample_shape);
  for (const auto& t : transforms_) x = t->forward(x);
  return x;
}

Tensor TransformedDistribution::log_prob(const Tensor& value) const {
  validate_sample(value);
  const auto event_dims = static_cast<int64_t>(event_shape_.size());
  Tensor y = value, lp;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) {
    const Tensor x = (*it)->inverse(y);
    const Tensor term = sum_rightmost((*it)->log_abs_det_jacobian(x, y), event_dims);
    lp = lp.defined() ? lp - term : -term;
    y = x;
  }
  const Tensor base_lp = base_->log_prob(y);
  return lp.defined() ? lp + base_lp : base_lp;
}

Tensor TransformedDistribution::monotonize(const Tensor& cdf) const {
  Tensor s = scalar_tensor(1.0);
  for (const auto& t : transforms_) s = s * t->sign();
  return s * (cdf - 0.5) + 0.5;
}

Tensor TransformedDistribution::cdf(const Tensor& value) const {
  Tensor x = value;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) x = (*it)->inverse(x);
  return monotonize(base_->cdf(x));
}

Tensor TransformedDistribution::icdf(const Tensor& value) const {
  Tensor x = base_->icdf(monotonize(value));
  for (const auto& t : transforms_) x = t->forward(x);
  return x;
}

Constraint TransformedDistribution::support() const {
  if (transforms_.empty()) return base_->support();
  const Constraint c = transforms_.back()->codomain();
  return event_shape_.empty() ? c : constraints::independent(c, static_cast<int64_t>(event_shape_.size()));
}

LogNormal::LogNormal(const Tensor& loc, const Tensor& scale, bool validate_args)
    : TransformedDistribution(std::make_shared<Normal>(loc, scale, validate_args), {std::make_shared<ExpTransform>()},
                              validate_args) {}

Tensor LogNormal::variance() const {
  const Tensor s2 = scale().square();
  return s2.expm1() * (2 * loc() + s2).exp();
}

}  // namespace ug::distributions
