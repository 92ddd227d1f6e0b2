// torch.distributions.transforms over structure: IndependentTransform and ReshapeTransform (event
// dims), CatTransform and StackTransform (transforms on slices), the matrix transforms
// (LowerCholesky, PositiveDefinite, CorrCholesky), CumulativeDistributionTransform, and
// biject_to / transform_to: the transform from the reals onto a constraint's set.
#pragma once

#include <memory>
#include <vector>

#include "ug/distributions/transformed.h"

namespace ug::distributions {

/** base with `ndims` more rightmost dims read as one event: its log |det J| summed over them. */
class IndependentTransform : public Transform {
 public:
  IndependentTransform(std::shared_ptr<const Transform> base, int64_t ndims) : base_(std::move(base)), n_(ndims) {}
  std::string repr() const override;
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint domain() const override { return constraints::independent(base_->domain(), n_); }
  Constraint codomain() const override { return constraints::independent(base_->codomain(), n_); }
  bool bijective() const override { return base_->bijective(); }
  Tensor sign() const override { return base_->sign(); }
  Dims forward_shape(const Dims& shape) const override { return base_->forward_shape(shape); }
  Dims inverse_shape(const Dims& shape) const override { return base_->inverse_shape(shape); }
  const std::shared_ptr<const Transform>& base_transform() const { return base_; }
  int64_t reinterpreted_batch_ndims() const { return n_; }

 private:
  std::shared_ptr<const Transform> base_;
  int64_t n_;
};

/** The rightmost in_shape dims reshaped to out_shape (log |det J| = 0). */
class ReshapeTransform : public Transform {
 public:
  ReshapeTransform(Dims in_shape, Dims out_shape);
  std::string repr() const override { return "ReshapeTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint domain() const override;
  Constraint codomain() const override;
  Dims forward_shape(const Dims& shape) const override;
  Dims inverse_shape(const Dims& shape) const override;
  const Dims& in_shape() const { return in_; }
  const Dims& out_shape() const { return out_; }

 private:
  Dims in_, out_;
};

/** parts[i] on the slice of lengths[i] along dim, the results concatenated (torch.cat). */
class CatTransform : public Transform {
 public:
  CatTransform(Transforms parts, int64_t dim, std::vector<int64_t> lengths);
  std::string repr() const override { return "CatTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint domain() const override;
  Constraint codomain() const override;
  bool bijective() const override;
  const Transforms& transforms() const { return parts_; }
  int64_t dim() const { return dim_; }
  const std::vector<int64_t>& lengths() const { return lengths_; }

 private:
  /** The largest event_dim of the parts. */
  int64_t event_dim() const;
  void check(const Tensor& t, const char* name) const;
  Transforms parts_;
  int64_t dim_;
  std::vector<int64_t> lengths_;
};

/** parts[i] on index i along dim, the results stacked (torch.stack). */
class StackTransform : public Transform {
 public:
  StackTransform(Transforms parts, int64_t dim) : parts_(std::move(parts)), dim_(dim) {}
  std::string repr() const override { return "StackTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint domain() const override;
  Constraint codomain() const override;
  bool bijective() const override;
  const Transforms& transforms() const { return parts_; }
  int64_t dim() const { return dim_; }

 private:
  void check(const Tensor& t, const char* name) const;
  Transforms parts_;
  int64_t dim_;
};

/** Square matrices onto lower-triangular ones with a positive diagonal: the strict lower part
 *  kept, the diagonal through exp (the upper part dropped: no log |det J|, as torch's). */
class LowerCholeskyTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "LowerCholeskyTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor&, const Tensor&) const override { not_implemented("log_abs_det_jacobian"); }
  Constraint domain() const override { return constraints::independent(constraints::real(), 2); }
  Constraint codomain() const override { return constraints::lower_cholesky(); }
  /** Not on all of its domain: the upper part is dropped (torch's). */
  bool bijective() const override { return false; }
  Tensor sign() const override { not_implemented("sign"); }
};

/** Square matrices onto positive-definite ones: L L^T of LowerCholeskyTransform's L. */
class PositiveDefiniteTransform : public ParameterlessTransform {
 public:
  std::string repr() const override { return "PositiveDefiniteTransform()"; }
  Tensor forward(const Tensor& x) const override;
  /** The Cholesky factor pulled back through LowerCholeskyTransform. */
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor&, const Tensor&) const override { not_implemented("log_abs_det_jacobian"); }
  Constraint domain() const override { return constraints::independent(constraints::real(), 2); }
  Constraint codomain() const override { return constraints::positive_definite(); }
  /** Not on all of its domain: the upper part is dropped (torch's). */
  bool bijective() const override { return false; }
  Tensor sign() const override { not_implemented("sign"); }
};

/** Vectors of D (D - 1) / 2 reals onto Cholesky factors of D x D correlation matrices: each
 *  row of the strict lower part through tanh, then a signed stick breaking of the unit norm. */
class CorrCholeskyTransform : public Transform {
 public:
  std::string repr() const override { return "CorrCholeskyTransform()"; }
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Constraint domain() const override { return constraints::independent(constraints::real(), 1); }
  Constraint codomain() const override { return constraints::corr_cholesky(); }
  Tensor sign() const override { not_implemented("sign"); }
  Dims forward_shape(const Dims& shape) const override;
  Dims inverse_shape(const Dims& shape) const override;
};

/** y = distribution's cdf(x): onto [0, 1], log |det J| = log_prob(x). */
class CumulativeDistributionTransform : public Transform {
 public:
  explicit CumulativeDistributionTransform(std::shared_ptr<const Distribution> d) : d_(std::move(d)) {}
  std::string repr() const override { return "CumulativeDistributionTransform()"; }
  Tensor forward(const Tensor& x) const override { return d_->cdf(x); }
  Tensor inverse(const Tensor& y) const override { return d_->icdf(y); }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override { return d_->log_prob(x); }
  Constraint domain() const override { return d_->support(); }
  Constraint codomain() const override { return constraints::unit_interval(); }
  const std::shared_ptr<const Distribution>& distribution() const { return d_; }

 private:
  std::shared_ptr<const Distribution> d_;
};

/** A bijection from the reals (of the constraint's event dims) onto the constraint's set
 *  (torch.distributions.biject_to); NotImplementedError for a set it has none for. */
std::shared_ptr<const Transform> biject_to(const Constraint& c);
/** A map from the reals onto the set, not necessarily bijective: softmax for the simplex and
 *  the Cholesky and positive-definite maps besides biject_to's (torch's transform_to). */
std::shared_ptr<const Transform> transform_to(const Constraint& c);

}  // namespace ug::distributions
