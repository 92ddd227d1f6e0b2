// torch.distributions.transforms: the elementwise maps (Exp, Affine, Sigmoid, Tanh, Power,
// Softplus, Abs and the inverses), those over vectors (Softmax, StickBreaking), ComposeTransform,
// and TransformedDistribution: a base distribution's draws pushed through them, with log_prob by
// the change of variables. LogNormal is one (Normal through exp), LogisticNormal another (Normal
// vectors through stick breaking).
#pragma once

#include <memory>
#include <typeinfo>
#include <vector>

#include "ug/distributions/distribution.h"
#include "ug/distributions/univariate.h"

namespace ug::distributions {

/** An invertible map y = f(x) (torch.distributions.transforms.Transform): elementwise, or over
 *  the last dims of x and y where domain() and codomain() have an event_dim. */
class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string repr() const = 0;
  virtual Tensor forward(const Tensor& x) const = 0;
  /** f^-1 on f's image; for a map that is not bijective, one preimage (torch's). */
  virtual Tensor inverse(const Tensor& y) const = 0;
  /** log |det dy/dx|, elementwise (summed over the domain's event dims). */
  virtual Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const = 0;
  virtual Constraint domain() const { return constraints::real(); }
  virtual Constraint codomain() const { return constraints::real(); }
  virtual bool bijective() const { return true; }
  /** +1 where f increases, -1 where it decreases (a tensor broadcasting with x). */
  virtual Tensor sign() const { return scalar_tensor(1.0); }
  /** The shape of f(x) for x of shape `shape` (parameters broadcast with it). */
  virtual Dims forward_shape(const Dims& shape) const { return shape; }
  /** The shape of f^-1(y) for y of shape `shape`. */
  virtual Dims inverse_shape(const Dims& shape) const { return shape; }
  /** torch's ==, which KL(TransformedDistribution || TransformedDistribution) needs: by default
   *  the same object; transforms with parameters compare them. */
  virtual bool equals(const Transform& other) const { return this == &other; }

 protected:
  [[noreturn]] void not_implemented(const char* what) const;
};

/** A transform without parameters: equal to any of its class (torch's isinstance ==). */
class ParameterlessTransform : public Transform {
 public:
  bool equals(const Transform& other) const override { return typeid(*this) == typeid(other); }
};

/** y = exp(x). */
class ExpTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "ExpTransform()"; }
  Tensor forward(const Tensor& x) const override { return x.exp(); }
  Tensor inverse(const Tensor& y) const override { return y.log(); }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override { return x; }
  Constraint codomain() const override { return constraints::positive(); }
};

/** y = loc + scale * x. */
class AffineTransform : public Transform {
 public:
  AffineTransform(const Tensor& loc, const Tensor& scale) : loc_(loc), scale_(scale) {}
  std::string repr() const override { return "AffineTransform()"; }
  Tensor forward(const Tensor& x) const override { return loc_ + scale_ * x; }
  Tensor inverse(const Tensor& y) const override { return (y - loc_) / scale_; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override;
  Tensor sign() const override { return scale_.sign(); }
  Dims forward_shape(const Dims& shape) const override;
  Dims inverse_shape(const Dims& shape) const override { return forward_shape(shape); }
  bool equals(const Transform& other) const override;
  const Tensor& loc() const { return loc_; }
  const Tensor& scale() const { return scale_; }

 private:
  Tensor loc_, scale_;
};

/** y = sigmoid(x), kept inside [tiny, 1 - eps] both ways (torch's clipping). */
class SigmoidTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "SigmoidTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint codomain() const override { return constraints::unit_interval(); }
};

/** f^-1 of another transform (torch's t.inv). */
class InverseTransform : public Transform {
 public:
  explicit InverseTransform(std::shared_ptr<const Transform> t) : t_(std::move(t)) {}
  std::string repr() const override { return "_InverseTransform(" + t_->repr() + ")"; }
  Tensor forward(const Tensor& x) const override { return t_->inverse(x); }
  Tensor inverse(const Tensor& y) const override { return t_->forward(y); }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override {
    return -t_->log_abs_det_jacobian(y, x);
  }
  Constraint domain() const override { return t_->codomain(); }
  Constraint codomain() const override { return t_->domain(); }
  bool bijective() const override { return t_->bijective(); }
  Tensor sign() const override { return t_->sign(); }
  Dims forward_shape(const Dims& shape) const override { return t_->inverse_shape(shape); }
  Dims inverse_shape(const Dims& shape) const override { return t_->forward_shape(shape); }
  bool equals(const Transform& other) const override {
    auto* inv = dynamic_cast<const InverseTransform*>(&other);
    return inv && t_->equals(*inv->t_);
  }
  /** The transform this inverts (its .inv, as torch's). */
  const std::shared_ptr<const Transform>& inverted() const { return t_; }

 private:
  std::shared_ptr<const Transform> t_;
};

/** y = tanh(x); the inverse atanh is not clamped (torch's). */
class TanhTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "TanhTransform()"; }
  Tensor forward(const Tensor& x) const override { return x.tanh(); }
  Tensor inverse(const Tensor& y) const override { return y.atanh(); }
  /** log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|. */
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint codomain() const override { return constraints::interval(-1.0, 1.0); }
};

/** y = x^exponent on the positive reals. */
class PowerTransform : public Transform {
 public:
  explicit PowerTransform(const Tensor& exponent) : exponent_(exponent) {}
  std::string repr() const override { return "PowerTransform()"; }
  Tensor forward(const Tensor& x) const override { return x.pow(exponent_); }
  Tensor inverse(const Tensor& y) const override { return y.pow(exponent_.reciprocal()); }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override {
    return (exponent_ * y / x).abs().log();
  }
  Constraint domain() const override { return constraints::positive(); }
  Constraint codomain() const override { return constraints::positive(); }
  Tensor sign() const override { return exponent_.sign(); }
  Dims forward_shape(const Dims& shape) const override;
  Dims inverse_shape(const Dims& shape) const override { return forward_shape(shape); }
  bool equals(const Transform& other) const override;
  const Tensor& exponent() const { return exponent_; }

 private:
  Tensor exponent_;
};

/** y = softplus(x) = log(1 + e^x) (x itself past 20, as torch's). */
class SoftplusTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "SoftplusTransform()"; }
  Tensor forward(const Tensor& x) const override;
  /** log(-expm1(-y)) + y. */
  Tensor inverse(const Tensor& y) const override;
  /** -softplus(-x). */
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint codomain() const override { return constraints::positive(); }
};

/** y = |x|: not bijective; its inverse gives the non-negative preimage. */
class AbsTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "AbsTransform()"; }
  Tensor forward(const Tensor& x) const override { return x.abs(); }
  Tensor inverse(const Tensor& y) const override { return y; }
  Tensor log_abs_det_jacobian(const Tensor&, const Tensor&) const override { not_implemented("log_abs_det_jacobian"); }
  Constraint codomain() const override { return constraints::positive(); }
  bool bijective() const override { return false; }
  Tensor sign() const override { not_implemented("sign"); }
};

/** y = softmax(x) over the last dim; not bijective (x is determined up to a constant): the
 *  inverse is log y. */
class SoftmaxTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "SoftmaxTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override { return y.log(); }
  Tensor log_abs_det_jacobian(const Tensor&, const Tensor&) const override { not_implemented("log_abs_det_jacobian"); }
  Constraint domain() const override { return constraints::independent(constraints::real(), 1); }
  Constraint codomain() const override { return constraints::simplex(); }
  bool bijective() const override { return false; }
  Tensor sign() const override { not_implemented("sign"); }
};

/** The reals^(K-1) onto the K-simplex by stick breaking: z_i = sigmoid(x_i - log(K - 1 - i)),
 *  y_i = z_i prod_{j<i} (1 - z_j), the last y the rest of the stick. */
class StickBreakingTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "StickBreakingTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint domain() const override { return constraints::independent(constraints::real(), 1); }
  Constraint codomain() const override { return constraints::simplex(); }
  Tensor sign() const override { not_implemented("sign"); }
  Dims forward_shape(const Dims& shape) const override;
  Dims inverse_shape(const Dims& shape) const override;
};

using Transforms = std::vector<std::shared_ptr<const Transform>>;

/** The parts applied in order; with none, the identity (torch's identity_transform). Its domain
 *  and codomain span as many event dims as the parts need between them. */
class ComposeTransform : public Transform {
 public:
  explicit ComposeTransform(Transforms parts) : parts_(std::move(parts)) {}
  std::string repr() const override;
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  /** The parts' terms, each summed over the event dims it does not cover itself. */
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint domain() const override;
  Constraint codomain() const override;
  bool bijective() const override;
  /** The product of the parts' signs. */
  Tensor sign() const override;
  Dims forward_shape(const Dims& shape) const override;
  Dims inverse_shape(const Dims& shape) const override;
  bool equals(const Transform& other) const override;
  const Transforms& parts() const { return parts_; }

 private:
  Transforms parts_;
};

/** base's draws through transforms, in order. Transforms over vectors (Softmax, StickBreaking)
 *  read the base's rightmost batch dims as event dims, as torch's. */
class TransformedDistribution : public Distribution {
 public:
  TransformedDistribution(std::shared_ptr<const Distribution> base, Transforms transforms, bool validate_args = true);
  std::string name() const override { return "TransformedDistribution"; }
  bool has_rsample() const override { return base_->has_rsample(); }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor rsample(const Dims& sample_shape = {}) const override;
  /** base's log_prob at the pulled-back value less each log |det J| (summed over the event dims). */
  Tensor log_prob(const Tensor& value) const override;
  /** base's cdf at the pulled-back value (1 - it where the transforms decrease). */
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override;
  const std::shared_ptr<const Distribution>& base_dist() const { return base_; }
  const Transforms& transforms() const { return transforms_; }
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override {
    return std::make_shared<TransformedDistribution>(base_->expand(batch_shape), transforms_, validate_args_);
  }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {}; }
  /** s * (cdf - 1/2) + 1/2, s the product of the transforms' signs. */
  Tensor monotonize(const Tensor& cdf) const;

 private:
  std::shared_ptr<const Distribution> base_;
  Transforms transforms_;
};

/** exp(Normal(loc, scale)). */
class LogNormal : public TransformedDistribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<LogNormal>(p[0], p[1], validate_args());
  }
  /** A LogNormal again, of the parameters expanded. */
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override {
    return Distribution::expand(batch_shape);
  }
  LogNormal(const Tensor& loc, const Tensor& scale, bool validate_args = true);
  std::string name() const override { return "LogNormal"; }
  Tensor entropy() const override { return normal().entropy() + loc(); }
  Tensor mean() const override { return (loc() + scale().square() / 2).exp(); }
  Tensor variance() const override;
  Tensor mode() const override { return (loc() - scale().square()).exp(); }
  const Tensor& loc() const { return normal().loc(); }
  const Tensor& scale() const { return normal().scale(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"loc", loc()}, {"scale", scale()}}; }

 private:
  const Normal& normal() const { return static_cast<const Normal&>(*base_dist()); }
};

/** Normal(loc, scale) vectors of K - 1 through StickBreakingTransform: points of the K-simplex.
 *  Scalar parameters give one vector of one (torch's). */
class LogisticNormal : public TransformedDistribution {
 public:
  std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& p) const override {
    return std::make_shared<LogisticNormal>(p[0], p[1], validate_args());
  }
  /** A LogisticNormal again, of the parameters expanded. */
  std::shared_ptr<Distribution> expand(const Dims& batch_shape) const override {
    return Distribution::expand(batch_shape);
  }
  LogisticNormal(const Tensor& loc, const Tensor& scale, bool validate_args = true);
  std::string name() const override { return "LogisticNormal"; }
  const Tensor& loc() const { return normal().loc(); }
  const Tensor& scale() const { return normal().scale(); }

 protected:
  std::vector<std::pair<std::string, Tensor>> params() const override { return {{"loc", loc()}, {"scale", scale()}}; }

 private:
  const Normal& normal() const;
};

}  // namespace ug::distributions
