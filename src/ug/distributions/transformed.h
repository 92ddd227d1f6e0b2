// torch.distributions.transforms' elementwise bijections (Exp, Affine, Sigmoid and their
// inverses) and TransformedDistribution: a base distribution's draws pushed through them, with
// log_prob by the change of variables. LogNormal is one: Normal through exp.
#pragma once

#include <memory>
#include <vector>

#include "ug/distributions/distribution.h"
#include "ug/distributions/univariate.h"

namespace ug::distributions {

/** An invertible elementwise map y = f(x) (torch.distributions.transforms.Transform). */
class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string repr() const = 0;
  virtual Tensor forward(const Tensor& x) const = 0;
  virtual Tensor inverse(const Tensor& y) const = 0;
  /** log |dy/dx| elementwise. */
  virtual Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const = 0;
  virtual Constraint domain() const { return constraints::real(); }
  virtual Constraint codomain() const { return constraints::real(); }
  /** +1 where f increases, -1 where it decreases (a tensor broadcasting with x). */
  virtual Tensor sign() const { return scalar_tensor(1.0); }
  /** The shape of f(x) for x of shape `shape` (parameters broadcast with it). */
  virtual Dims forward_shape(const Dims& shape) const { return shape; }
};

/** y = exp(x). */
class ExpTransform : public Transform {
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
  const Tensor& loc() const { return loc_; }
  const Tensor& scale() const { return scale_; }

 private:
  Tensor loc_, scale_;
};

/** y = sigmoid(x), kept inside [tiny, 1 - eps] both ways (torch's clipping). */
class SigmoidTransform : public Transform {
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
  Tensor sign() const override { return t_->sign(); }

 private:
  std::shared_ptr<const Transform> t_;
};

using Transforms = std::vector<std::shared_ptr<const Transform>>;

/** base's draws through transforms, in order. */
class TransformedDistribution : public Distribution {
 public:
  TransformedDistribution(std::shared_ptr<const Distribution> base, Transforms transforms, bool validate_args = true);
  std::string name() const override { return "TransformedDistribution"; }
  bool has_rsample() const override { return base_->has_rsample(); }
  Tensor sample(const Dims& sample_shape = {}) const override;
  Tensor rsample(const Dims& sample_shape = {}) const override;
  /** base's log_prob at the pulled-back value less each log |det J|. */
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

}  // namespace ug::distributions
