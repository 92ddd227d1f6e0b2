#include "ug/distributions/distribution.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "ug/core/error.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"

namespace ug::distributions {

Dims concat(Dims a, const Dims& b) {
  for (int64_t v : b) a.push_back(v);
  return a;
}

Options like(const Tensor& t) { return {t.dtype(), t.device()}; }
double eps_of(const Tensor& t) {
  return t.dtype() == DType::Float64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}
double tiny_of(const Tensor& t) {
  return t.dtype() == DType::Float64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
}

Tensor global_key() { return randint(0, int64_t{1} << 32, {2}); }

Tensor sum_rightmost(const Tensor& x, int64_t n) {
  if (n <= 0) return x;
  Dims dims;
  for (int64_t i = 1; i <= n; ++i) dims.push_back(-i);
  return x.sum(dims);
}

namespace constraints {
namespace {
std::string bound_str(double v) {
  std::ostringstream os;
  os << v;
  std::string s = os.str();
  return s.find_first_of(".einf") == std::string::npos ? s + ".0" : s;  // Python's float repr
}
}  // namespace

Constraint real() {
  return {"Real()", [](const Tensor& x) { return x.eq(x); }};  // false at NaN only
}
Constraint positive() {
  return {"GreaterThan(lower_bound=" + bound_str(0) + ")", [](const Tensor& x) { return x.gt(0); }};
}
Constraint nonnegative() {
  return {"GreaterThanEq(lower_bound=" + bound_str(0) + ")", [](const Tensor& x) { return x.ge(0); }};
}
Constraint unit_interval() {
  return {"Interval(lower_bound=0.0, upper_bound=1.0)", [](const Tensor& x) { return x.ge(0).logical_and(x.le(1)); }};
}
Constraint boolean() {
  return {"Boolean()", [](const Tensor& x) { return x.eq(0).logical_or(x.eq(1)); }};
}
Constraint nonnegative_integer() {
  return {"IntegerGreaterThan(lower_bound=0)",
          [](const Tensor& x) { return x.remainder(1).eq(0).logical_and(x.ge(0)); }};
}
Constraint one_hot() {
  return {"OneHot()",
          [](const Tensor& x) { return x.eq(0).logical_or(x.eq(1)).all(-1).logical_and(x.sum({-1}).eq(1)); }, 1};
}
Constraint integer_interval(int64_t low, int64_t high) {
  return {"IntegerInterval(lower_bound=" + std::to_string(low) + ", upper_bound=" + std::to_string(high) + ")",
          [=](const Tensor& x) { return x.remainder(1).eq(0).logical_and(x.ge(low)).logical_and(x.le(high)); }};
}
Constraint interval(const Tensor& low, const Tensor& high) {
  return {"Interval(lower_bound=low, upper_bound=high)",
          [=](const Tensor& x) { return low.le(x).logical_and(x.le(high)); }, 0, low, high};
}
Constraint less_than(const Tensor& bound) {
  return {"LessThan(upper_bound=high)", [=](const Tensor& x) { return x.lt(bound); }, 0, {}, bound};
}
Constraint interval(double low, double high) {
  return {"Interval(lower_bound=" + bound_str(low) + ", upper_bound=" + bound_str(high) + ")",
          [=](const Tensor& x) { return x.ge(low).logical_and(x.le(high)); }, 0, scalar_tensor(low),
          scalar_tensor(high)};
}
Constraint greater_than(const Tensor& bound) {
  return {"GreaterThan(lower_bound=low)", [=](const Tensor& x) { return x.gt(bound); }, 0, bound};
}
Constraint greater_than_eq(const Tensor& bound) {
  return {"GreaterThanEq(lower_bound=low)", [=](const Tensor& x) { return x.ge(bound); }, 0, bound};
}
Constraint half_open_unit_interval() {
  return {"HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)",
          [](const Tensor& x) { return x.ge(0).logical_and(x.lt(1)); }};
}
Constraint simplex() {
  return {"Simplex()", [](const Tensor& x) { return x.ge(0).all(-1).logical_and((x.sum({-1}) - 1).abs().lt(1e-6)); },
          1};
}
Constraint independent(const Constraint& base, int64_t ndims) {
  return {"IndependentConstraint(" + base.repr + ", " + std::to_string(ndims) + ")",
          [=](const Tensor& x) {
            Tensor ok = base.check(x);
            for (int64_t i = 0; i < ndims; ++i) ok = ok.all(-1);
            return ok;
          },
          base.event_dim + ndims,
          {},
          {},
          {base}};
}
Constraint positive_definite() {
  return {"PositiveDefinite()",
          [](const Tensor& x) {
            Tensor symmetric = x.eq(x.mT()).all(-1).all(-1);
            return symmetric.logical_and(linalg::cholesky_ex(x).info.eq(0));
          },
          2};
}
Constraint corr_cholesky() {
  return {"CorrCholesky()",
          [](const Tensor& x) {
            const double tol = 10 * eps_of(x) * static_cast<double>(x.size(-1));
            const Tensor unit_rows = (x.square().sum({-1}).sqrt() - 1).abs().le(tol).all(-1);
            return lower_cholesky().check(x).logical_and(unit_rows);
          },
          2};
}
Constraint cat(std::vector<Constraint> parts, int64_t dim, std::vector<int64_t> lengths) {
  int64_t event_dim = 0;
  for (const Constraint& c : parts) event_dim = std::max(event_dim, c.event_dim);
  return {"Cat()",
          [=](const Tensor& x) {
            std::vector<Tensor> checks;
            int64_t start = 0;
            for (size_t i = 0; i < parts.size(); ++i) {
              checks.push_back(parts[i].check(x.narrow(dim, start, lengths[i])));
              start += lengths[i];
            }
            return ug::cat(checks, dim);
          },
          event_dim,
          {},
          {},
          parts,
          dim,
          lengths};
}
Constraint stack(std::vector<Constraint> parts, int64_t dim) {
  int64_t event_dim = 0;
  for (const Constraint& c : parts) event_dim = std::max(event_dim, c.event_dim);
  return {"Stack()",
          [=](const Tensor& x) {
            std::vector<Tensor> checks;
            for (size_t i = 0; i < parts.size(); ++i)
              checks.push_back(parts[i].check(x.select(dim, static_cast<int64_t>(i))));
            return ug::stack(checks, dim);
          },
          event_dim,
          {},
          {},
          parts,
          dim};
}
Constraint lower_cholesky() {
  return {"LowerCholesky()",
          [](const Tensor& x) {
            Tensor lower = tril(x).eq(x).all(-1).all(-1);
            return lower.logical_and(x.diagonal(0, -2, -1).gt(0).all(-1));
          },
          2};
}
}  // namespace constraints

namespace {
bool all_true(const Tensor& t) { return t.all().item<bool>(); }
}  // namespace

std::string Distribution::repr() const {
  std::string s = name() + "(";
  bool first = true;
  for (const auto& [param, value] : params()) {
    std::ostringstream v;
    if (value.numel() == 1) v << value.to(DType::Float64).reshape({}).item<double>();
    else v << shape_str(value.shape());
    s += (first ? "" : ", ") + param + ": " + v.str();
    first = false;
  }
  return s + ")";
}

void Distribution::check_param(const std::string& param, const Tensor& value, const Constraint& c) const {
  if (!validate_args_ || all_true(c.check(value))) return;
  fail("[", name(), "] expected parameter ", param, " (Tensor of shape ", shape_str(value.shape()),
       ") of distribution ", repr(), " to satisfy the constraint ", c.repr, ", but found invalid values");
}

void Distribution::validate_sample(const Tensor& value) const {
  if (!validate_args_) return;
  const Dims& shape = value.shape();
  const size_t ne = event_shape_.size();
  if (shape.size() < ne || !std::equal(event_shape_.begin(), event_shape_.end(), shape.end() - ne))
    fail("[", name(), "] the right-most size of value must match event_shape: ", shape_str(shape), " vs ",
         shape_str(event_shape_));
  Dims expected = concat(batch_shape_, event_shape_);
  for (size_t i = 0; i < std::min(shape.size(), expected.size()); ++i) {
    int64_t a = shape[shape.size() - 1 - i], b = expected[expected.size() - 1 - i];
    if (a != 1 && b != 1 && a != b)
      fail("[", name(), "] value is not broadcastable with batch_shape+event_shape: ", shape_str(shape), " vs ",
           shape_str(expected));
  }
  Constraint s = support();
  if (!all_true(s.check(value)))
    fail("[", name(), "] expected value argument (Tensor of shape ", shape_str(shape), ") to be within the support (",
         s.repr, ") of the distribution ", repr(), ", but found invalid values");
}

Dims Distribution::extended_shape(const Dims& sample_shape) const {
  return concat(concat(sample_shape, batch_shape_), event_shape_);
}

void Distribution::not_implemented(const char* what) const {
  throw NotImplementedError(detail::cat("[", name(), "] ", what, " is not implemented"));
}

Tensor Distribution::sample(const Dims& sample_shape) const {
  NoGradGuard no_grad;
  return rsample(sample_shape);
}
Tensor Distribution::rsample(const Dims&) const { not_implemented("rsample (it has no reparameterised sampler)"); }
Tensor Distribution::entropy() const { not_implemented("entropy"); }
Tensor Distribution::mean() const { not_implemented("mean"); }
Tensor Distribution::variance() const { not_implemented("variance"); }
Tensor Distribution::mode() const { not_implemented("mode"); }

std::shared_ptr<Distribution> Distribution::expand(const Dims& batch_shape) const {
  std::vector<Tensor> expanded;
  for (const auto& [param, value] : params()) {
    // The parameters span the batch shape, then their own event dims.
    const Dims& s = value.shape();
    expanded.push_back(value.expand(concat(batch_shape, Dims(s.begin() + batch_shape_.size(), s.end()))));
  }
  return rebuild(expanded);
}

std::shared_ptr<Distribution> Distribution::rebuild(const std::vector<Tensor>&) const { not_implemented("expand"); }
Tensor Distribution::cdf(const Tensor&) const { not_implemented("cdf"); }
Tensor Distribution::icdf(const Tensor&) const { not_implemented("icdf"); }

}  // namespace ug::distributions
