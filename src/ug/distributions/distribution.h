// torch.distributions' base: a batch of distributions over events, built from ops so that
// log_prob, rsample and the moments take gradients, run under jit and vmap.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::distributions {

/** The set a parameter or value must lie in (torch.distributions.constraints): `check` gives
 *  a bool tensor, one element per element of the value (per vector or matrix for the
 *  constraints over events). */
struct Constraint {
  std::string repr;  // torch's repr, e.g. "GreaterThan(lower_bound=0.0)"
  std::function<Tensor(const Tensor&)> check;
  int64_t event_dim = 0;  // the dims checked together: 1 for vectors (simplex), 2 for matrices
  // What biject_to and transform_to read: the bounds of GreaterThan(Eq), LessThan and Interval
  // (undefined for positive, nonnegative and the unit interval), the base of Independent as its
  // one part, the parts of Cat and Stack along dim (Cat's of those lengths).
  Tensor lower, upper;
  std::vector<Constraint> parts;
  int64_t dim = 0;
  std::vector<int64_t> lengths;
  /** The constraint's class: its repr up to the parenthesis ("GreaterThan", "Independent..."). */
  std::string kind() const { return repr.substr(0, repr.find('(')); }
};

namespace constraints {
Constraint real();
Constraint positive();
Constraint nonnegative();
Constraint unit_interval();
Constraint boolean();
/** Integers >= 0. */
Constraint nonnegative_integer();
/** Vectors of 0s and a single 1 over the last dim. */
Constraint one_hot();
/** Integers in [low, high]. */
Constraint integer_interval(int64_t low, int64_t high);
/** low <= x <= high, elementwise (tensors broadcast with x). */
Constraint interval(const Tensor& low, const Tensor& high);
Constraint less_than(const Tensor& bound);
/** low <= x <= high for numbers. */
Constraint interval(double low, double high);
Constraint greater_than(const Tensor& bound);
Constraint greater_than_eq(const Tensor& bound);
/** 0 <= x < 1. */
Constraint half_open_unit_interval();
/** Non-negative and summing to 1 over the last dim. */
Constraint simplex();
/** `base` over the last `ndims` dims at once: all of them must satisfy it. */
Constraint independent(const Constraint& base, int64_t ndims);
Constraint positive_definite();
Constraint lower_cholesky();
/** Lower-triangular with a positive diagonal and rows of unit norm (Cholesky factors of
 *  correlation matrices). */
Constraint corr_cholesky();
/** parts[i] on the slice of lengths[i] along dim, in order (torch's constraints.cat). */
Constraint cat(std::vector<Constraint> parts, int64_t dim, std::vector<int64_t> lengths);
/** parts[i] on index i along dim (torch's constraints.stack). */
Constraint stack(std::vector<Constraint> parts, int64_t dim);
}  // namespace constraints

/** A batch of distributions (batch_shape) over events (event_shape). Parameters are checked
 *  against their constraints at construction and values against the support in log_prob and
 *  cdf, raising ValueError, unless validate_args is false. */
class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual std::string name() const = 0;
  const Dims& batch_shape() const { return batch_shape_; }
  const Dims& event_shape() const { return event_shape_; }
  bool validate_args() const { return validate_args_; }
  virtual bool has_rsample() const { return false; }

  /** Draws of shape sample_shape + batch_shape + event_shape, without history. */
  virtual Tensor sample(const Dims& sample_shape = {}) const;
  /** The same, differentiable with respect to the parameters (reparameterised). */
  virtual Tensor rsample(const Dims& sample_shape = {}) const;
  virtual Tensor log_prob(const Tensor& value) const = 0;
  virtual Tensor entropy() const;
  virtual Tensor mean() const;
  virtual Tensor variance() const;
  virtual Tensor stddev() const { return variance().sqrt(); }
  /** The most likely value (torch's mode; NaN where there is none). */
  virtual Tensor mode() const;
  virtual Tensor cdf(const Tensor& value) const;
  virtual Tensor icdf(const Tensor& value) const;
  virtual Constraint support() const = 0;
  /** torch's repr: "Normal(loc: [3], scale: [3])". */
  virtual std::string repr() const;
  /** The same distribution with this batch shape (its parameters expanded to it; torch's expand). */
  virtual std::shared_ptr<Distribution> expand(const Dims& batch_shape) const;

 protected:
  Distribution(Dims batch_shape, Dims event_shape, bool validate_args)
      : batch_shape_(std::move(batch_shape)), event_shape_(std::move(event_shape)), validate_args_(validate_args) {}
  /** The named parameters, for repr and the argument checks. */
  virtual std::vector<std::pair<std::string, Tensor>> params() const = 0;
  /** The same kind of distribution on other values of params() (in its order), for expand. */
  virtual std::shared_ptr<Distribution> rebuild(const std::vector<Tensor>& params) const;
  /** Raises ValueError where a parameter breaks its constraint (when validate_args). */
  void check_param(const std::string& param, const Tensor& value, const Constraint& c) const;
  /** Raises ValueError where `value` does not fit the shapes or lies outside the support. */
  void validate_sample(const Tensor& value) const;
  Dims extended_shape(const Dims& sample_shape) const;
  [[noreturn]] void not_implemented(const char* what) const;

  Dims batch_shape_, event_shape_;
  bool validate_args_;
};

/** A JAX-style key drawn from the global generator (ug::manual_seed), for ug::random's samplers. */
Tensor global_key();
/** x summed over its last n dims. */
Tensor sum_rightmost(const Tensor& x, int64_t n);
/** a followed by b. */
Dims concat(Dims a, const Dims& b);
/** t's dtype and device, for tensors made beside it. */
Options like(const Tensor& t);
/** The machine epsilon and the smallest normal number of t's dtype (torch's finfo eps, tiny). */
double eps_of(const Tensor& t);
double tiny_of(const Tensor& t);

}  // namespace ug::distributions
