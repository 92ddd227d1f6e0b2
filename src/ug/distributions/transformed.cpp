#include "ug/distributions/transformed.h"

#include <algorithm>
#include <limits>

#include "ug/core/error.h"
#include "ug/distributions/multivariate.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/join.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
/** log(1 + e^x), x itself past 20 (torch's softplus threshold). */
Tensor softplus(const Tensor& x) { return where(x.gt(20), x, x.logaddexp(0)); }

/** x kept inside [tiny, 1 - eps] of its dtype. */
Tensor clip_unit(const Tensor& x) {
  const bool f64 = x.dtype() == DType::Float64;
  const double tiny = f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  const double eps = f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  return x.clamp(Scalar(tiny), Scalar(1 - eps));
}
}  // namespace

void Transform::not_implemented(const char* what) const {
  throw NotImplementedError(detail::cat("[", repr(), "] ", what, " is not implemented"));
}

Tensor AffineTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  // In the dtype of y = loc + scale * x: a scale given as a number is exact there.
  const Tensor scale = scale_.to(promote_types(scale_.dtype(), x.dtype()));
  return scale.abs().log().expand(broadcast_shapes({x.shape(), scale_.shape()}));
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
  return -softplus(-x) - softplus(x);
}

Tensor TanhTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return 2 * (std::log(2.0) - x - softplus(-2 * x));
}

namespace {
/** a == b everywhere (broadcast), as torch's (a == b).all(). */
bool all_equal(const Tensor& a, const Tensor& b) { return a.eq(b).all().item<bool>(); }
}  // namespace

bool AffineTransform::equals(const Transform& other) const {
  auto* o = dynamic_cast<const AffineTransform*>(&other);
  return o && all_equal(loc_, o->loc_) && all_equal(scale_, o->scale_);
}

bool PowerTransform::equals(const Transform& other) const {
  auto* o = dynamic_cast<const PowerTransform*>(&other);
  return o && all_equal(exponent_, o->exponent_);
}

Dims PowerTransform::forward_shape(const Dims& shape) const { return broadcast_shapes({shape, exponent_.shape()}); }

Tensor SoftplusTransform::forward(const Tensor& x) const { return softplus(x); }
Tensor SoftplusTransform::inverse(const Tensor& y) const { return (-(-y).expm1()).log() + y; }
Tensor SoftplusTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const { return -softplus(-x); }

Tensor SoftmaxTransform::forward(const Tensor& x) const {
  const Tensor e = (x - x.amax({-1}, true)).exp();
  return e / e.sum({-1}, true);
}

namespace {
/** log(K - 1 - i) for i < K - 1 = n, the stick's offsets: arange(n, 0, -1).log(). */
Tensor stick_offsets(int64_t n, const Tensor& like_t) {
  return (static_cast<double>(n) - arange(n, {like_t.dtype(), like_t.device()})).log();
}
}  // namespace

Tensor StickBreakingTransform::forward(const Tensor& x) const {
  const Tensor z = clip_unit((x - stick_offsets(x.size(-1), x)).sigmoid());
  const Tensor rest = (1 - z).cumprod(-1);
  // [z, 1] * [1, rest]: each piece is z of what the earlier ones left
  return pad(z, {0, 1}, "constant", Scalar(1.0)) * pad(rest, {1, 0}, "constant", Scalar(1.0));
}

Tensor StickBreakingTransform::inverse(const Tensor& y) const {
  const int64_t n = y.size(-1) - 1;
  const Tensor crop = y.narrow(-1, 0, n);
  const Tensor left = (1 - crop.cumsum(-1)).clamp(Scalar(tiny_of(y)), std::nullopt);
  return crop.log() - left.log() + stick_offsets(n, y);
}

Tensor StickBreakingTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  const Tensor shifted = x - stick_offsets(x.size(-1), x);
  return (-shifted - softplus(-shifted) + y.narrow(-1, 0, x.size(-1)).log()).sum({-1});
}

Dims StickBreakingTransform::forward_shape(const Dims& shape) const {
  if (shape.empty()) fail("[StickBreakingTransform] too few dimensions on input");
  Dims out = shape;
  out.back() += 1;
  return out;
}

Dims StickBreakingTransform::inverse_shape(const Dims& shape) const {
  if (shape.empty()) fail("[StickBreakingTransform] too few dimensions on input");
  Dims out = shape;
  out.back() -= 1;
  return out;
}

// ---- ComposeTransform --------------------------------------------------------------------

std::string ComposeTransform::repr() const {
  std::string s = "ComposeTransform(\n    ";
  for (size_t i = 0; i < parts_.size(); ++i) s += (i ? ",\n    " : "") + parts_[i]->repr();
  return s + "\n)";
}

Tensor ComposeTransform::forward(const Tensor& x) const {
  Tensor y = x;
  for (const auto& t : parts_) y = t->forward(y);
  return y;
}

Tensor ComposeTransform::inverse(const Tensor& y) const {
  Tensor x = y;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) x = (*it)->inverse(x);
  return x;
}

Constraint ComposeTransform::domain() const {
  if (parts_.empty()) return constraints::real();
  // The event dims the last part's codomain spans, carried back through the parts.
  int64_t event_dim = parts_.back()->codomain().event_dim;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) {
    event_dim += (*it)->domain().event_dim - (*it)->codomain().event_dim;
    event_dim = std::max(event_dim, (*it)->domain().event_dim);
  }
  const Constraint d = parts_.front()->domain();
  return event_dim > d.event_dim ? constraints::independent(d, event_dim - d.event_dim) : d;
}

Constraint ComposeTransform::codomain() const {
  if (parts_.empty()) return constraints::real();
  int64_t event_dim = parts_.front()->domain().event_dim;
  for (const auto& t : parts_) {
    event_dim += t->codomain().event_dim - t->domain().event_dim;
    event_dim = std::max(event_dim, t->codomain().event_dim);
  }
  const Constraint c = parts_.back()->codomain();
  return event_dim > c.event_dim ? constraints::independent(c, event_dim - c.event_dim) : c;
}

Tensor ComposeTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  if (parts_.empty()) return zeros_like(x);
  int64_t event_dim = domain().event_dim;
  Tensor total, xi = x;
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Tensor yi = i + 1 == parts_.size() ? y : parts_[i]->forward(xi);
    const Tensor term =
        sum_rightmost(parts_[i]->log_abs_det_jacobian(xi, yi), event_dim - parts_[i]->domain().event_dim);
    total = total.defined() ? total + term : term;
    event_dim += parts_[i]->codomain().event_dim - parts_[i]->domain().event_dim;
    xi = yi;
  }
  return total;
}

bool ComposeTransform::equals(const Transform& other) const {
  auto* o = dynamic_cast<const ComposeTransform*>(&other);
  return o && o->parts_.size() == parts_.size() &&
         std::equal(parts_.begin(), parts_.end(), o->parts_.begin(),
                    [](const auto& a, const auto& b) { return a->equals(*b); });
}

bool ComposeTransform::bijective() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const auto& t) { return t->bijective(); });
}

Tensor ComposeTransform::sign() const {
  Tensor s = scalar_tensor(1.0);
  for (const auto& t : parts_) s = s * t->sign();
  return s;
}

Dims ComposeTransform::forward_shape(const Dims& shape) const {
  Dims s = shape;
  for (const auto& t : parts_) s = t->forward_shape(s);
  return s;
}

Dims ComposeTransform::inverse_shape(const Dims& shape) const {
  Dims s = shape;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) s = (*it)->inverse_shape(s);
  return s;
}

// ---- TransformedDistribution -------------------------------------------------------------

TransformedDistribution::TransformedDistribution(std::shared_ptr<const Distribution> base, Transforms transforms,
                                                 bool validate_args)
    : Distribution(base->batch_shape(), base->event_shape(), validate_args),
      base_(std::move(base)),
      transforms_(std::move(transforms)) {
  // torch's: the transforms together decide the shapes, and how many of the base's rightmost
  // batch dims their domain reads as event dims.
  const ComposeTransform t(transforms_);
  const Constraint domain = t.domain(), codomain = t.codomain();
  const Dims base_shape = concat(base_->batch_shape(), base_->event_shape());
  const auto base_event_dim = static_cast<int64_t>(base_->event_shape().size());
  if (static_cast<int64_t>(base_shape.size()) < domain.event_dim)
    fail("[TransformedDistribution] base_distribution needs to have shape with size at least ", domain.event_dim,
         ", but got ", shape_str(base_shape));
  const Dims shape = t.forward_shape(base_shape);
  const Dims expanded_base = t.inverse_shape(shape);
  // Parameters of the transforms may widen the batch: the base then draws that many (torch's).
  if (expanded_base != base_shape)
    base_ = base_->expand(Dims(expanded_base.begin(), expanded_base.end() - base_event_dim));
  if (domain.event_dim > base_event_dim)
    base_ = std::make_shared<Independent>(base_, domain.event_dim - base_event_dim, validate_args);
  const int64_t event_dim = std::max(codomain.event_dim, codomain.event_dim + base_event_dim - domain.event_dim);
  batch_shape_ = Dims(shape.begin(), shape.end() - event_dim);
  event_shape_ = Dims(shape.end() - event_dim, shape.end());
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
  auto event_dim = static_cast<int64_t>(event_shape_.size());
  Tensor y = value, lp;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) {
    const Tensor x = (*it)->inverse(y);
    event_dim += (*it)->domain().event_dim - (*it)->codomain().event_dim;
    const Tensor term = sum_rightmost((*it)->log_abs_det_jacobian(x, y), event_dim - (*it)->domain().event_dim);
    lp = lp.defined() ? lp - term : -term;
    y = x;
  }
  const Tensor base_lp =
      sum_rightmost(base_->log_prob(y), event_dim - static_cast<int64_t>(base_->event_shape().size()));
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
  const auto event_dim = static_cast<int64_t>(event_shape_.size());
  return event_dim > c.event_dim ? constraints::independent(c, event_dim - c.event_dim) : c;
}

LogNormal::LogNormal(const Tensor& loc, const Tensor& scale, bool validate_args)
    : TransformedDistribution(std::make_shared<Normal>(loc, scale, validate_args), {std::make_shared<ExpTransform>()},
                              validate_args) {}

Tensor LogNormal::variance() const {
  const Tensor s2 = scale().square();
  return s2.expm1() * (2 * loc() + s2).exp();
}

namespace {
std::shared_ptr<const Distribution> logistic_base(const Tensor& loc, const Tensor& scale, bool validate_args) {
  auto base = std::make_shared<Normal>(loc, scale, validate_args);
  if (base->batch_shape().empty()) return base->expand({1});
  return base;
}
}  // namespace

LogisticNormal::LogisticNormal(const Tensor& loc, const Tensor& scale, bool validate_args)
    : TransformedDistribution(logistic_base(loc, scale, validate_args), {std::make_shared<StickBreakingTransform>()},
                              validate_args) {}

const Normal& LogisticNormal::normal() const {
  return static_cast<const Normal&>(*static_cast<const Independent&>(*base_dist()).base_dist());
}

}  // namespace ug::distributions
