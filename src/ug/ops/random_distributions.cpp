#include "ug/ops/random_distributions.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::random {

namespace {

DType floating(std::optional<DType> dtype, const char* op) {
  const DType d = dtype.value_or(get_default_dtype());
  if (!is_floating(d)) fail<TypeError>("[random.", op, "] expects a floating dtype, got ", d);
  return d;
}

/** Uniform in (0, 1): the smallest normal number stands in for 0, whose log is -inf. */
Tensor open_uniform(const Tensor& key, const Dims& shape, DType d) {
  const double tiny = d == DType::Float64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  return uniform(key, shape, tiny, 1.0, d);
}

/** The representable number next to x towards `to`, in dtype d. */
double next_toward(double x, double to, DType d) {
  if (d == DType::Float64) return std::nextafter(x, to);
  return static_cast<double>(std::nextafter(static_cast<float>(x), static_cast<float>(to)));
}

}  // namespace

Tensor truncated_normal(const Tensor& key, double lower, double upper, const Dims& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "truncated_normal");
  if (!(lower < upper)) fail("[random.truncated_normal] needs lower < upper, got ", lower, " and ", upper);
  const double a = std::erf(lower / std::numbers::sqrt2), b = std::erf(upper / std::numbers::sqrt2);
  const Tensor z = erfinv(uniform(key, shape, a, b, d)) * std::numbers::sqrt2;
  // Rounding near +-1, where erfinv is steep, can step past a bound: keep the draws inside.
  const double inf = std::numeric_limits<double>::infinity();
  return z.clamp(Scalar(next_toward(lower, inf, d)), Scalar(next_toward(upper, -inf, d)));
}

Tensor exponential(const Tensor& key, const Dims& shape, std::optional<DType> dtype) {
  return -open_uniform(key, shape, floating(dtype, "exponential")).log();
}

Tensor laplace(const Tensor& key, const Dims& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "laplace");
  const Tensor u = uniform(key, shape, next_toward(-1.0, 0.0, d), 1.0, d);  // (-1, 1)
  return -u.sign() * (-u.abs()).log1p();
}

Tensor logistic(const Tensor& key, const Dims& shape, std::optional<DType> dtype) {
  const Tensor u = open_uniform(key, shape, floating(dtype, "logistic"));
  return u.log() - (-u).log1p();
}

Tensor cauchy(const Tensor& key, const Dims& shape, std::optional<DType> dtype) {
  const Tensor u = open_uniform(key, shape, floating(dtype, "cauchy"));
  return ((u - 0.5) * std::numbers::pi).tan();
}

Tensor gumbel(const Tensor& key, const Dims& shape, std::optional<DType> dtype) {
  return -(-open_uniform(key, shape, floating(dtype, "gumbel")).log()).log();
}

Tensor rademacher(const Tensor& key, const Dims& shape, DType dtype) {
  return (bernoulli(key, 0.5, shape).to(dtype) * 2 - 1).to(dtype);
}

Tensor lognormal(const Tensor& key, double sigma, const Dims& shape, std::optional<DType> dtype) {
  return (normal(key, shape, floating(dtype, "lognormal")) * sigma).exp();
}

Tensor choice(const Tensor& key, int64_t n, const Dims& shape, bool replace, const std::optional<Tensor>& p) {
  if (n <= 0) fail("[random.choice] needs a non-empty population, got ", n);
  int64_t k = 1;
  for (int64_t s : shape) k *= s;
  if (p && (p->dim() != 1 || p->size(0) != n))
    fail("[random.choice] p must be 1-d with one probability per entry (", n, "), got shape ", p->shape());
  if (replace) {
    if (!p) return randint(key, shape, 0, n);
    return categorical(key, p->log(), -1, shape);
  }
  if (k > n) fail("[random.choice] cannot take ", k, " entries from ", n, " without replacement");
  if (!p) return permutation(key, n).slice(0, 0, k).reshape(shape);
  // Without replacement and weighted: the k largest of log p + Gumbel noise (Gumbel top-k).
  return (p->log() + gumbel(key, {n}, p->dtype())).topk(k).second.reshape(shape);
}

Tensor choice(const Tensor& key, const Tensor& a, const Dims& shape, bool replace, const std::optional<Tensor>& p,
              int64_t axis) {
  if (a.dim() == 0) fail("[random.choice] a must have at least one dimension (or be an integer)");
  const int64_t ax = wrap_dim(axis, a.dim(), "random.choice");
  const Tensor picked = a.index_select(ax, choice(key, a.size(ax), shape, replace, p).reshape({-1}));
  Dims out(a.shape().begin(), a.shape().begin() + ax);
  for (int64_t s : shape) out.push_back(s);
  for (int64_t d = ax + 1; d < a.dim(); ++d) out.push_back(a.size(d));
  return picked.reshape(out);
}

Tensor multivariate_normal(const Tensor& key, const Tensor& mean, const Tensor& cov, const std::optional<Dims>& shape,
                           std::optional<DType> dtype) {
  if (mean.dim() < 1 || cov.dim() < 2 || cov.size(-1) != cov.size(-2) || cov.size(-1) != mean.size(-1))
    fail("[random.multivariate_normal] needs mean [..., n] and cov [..., n, n], got ", mean.shape(), " and ",
         cov.shape());
  const DType d = floating(dtype ? dtype : std::optional<DType>(mean.dtype()), "multivariate_normal");
  Dims batch;
  if (shape) {
    batch = *shape;
  } else {
    const Shape b = broadcast_shapes(Shape(mean.shape().begin(), mean.shape().end() - 1),
                                     Shape(cov.shape().begin(), cov.shape().end() - 2), "random.multivariate_normal");
    batch.assign(b.begin(), b.end());
  }
  Dims z_shape = batch;
  z_shape.push_back(mean.size(-1));
  const Tensor l = linalg::cholesky(cov.to(d));
  return mean.to(d) + l.matmul(normal(key, z_shape, d).unsqueeze(-1)).squeeze(Dims{-1});
}

Tensor orthogonal(const Tensor& key, int64_t n, const Dims& shape, std::optional<DType> dtype) {
  if (n < 1) fail("[random.orthogonal] n must be positive, got ", n);
  Dims z_shape = shape;
  z_shape.push_back(n);
  z_shape.push_back(n);
  auto [q, r] = linalg::qr(normal(key, z_shape, floating(dtype, "orthogonal")));
  // Q's columns times the signs of R's diagonal: the Haar measure, not QR's sign convention.
  return q * r.diagonal(0, -2, -1).sign().unsqueeze(-2);
}

namespace {

/** `shape`, or x's shape when none is given. */
Dims shape_or(const std::optional<Dims>& shape, const Tensor& x) {
  return shape ? *shape : Dims(x.shape().begin(), x.shape().end());
}

/** A parameter of a distribution as a floating tensor of `shape`, checked positive. */
Tensor positive(const Tensor& x, const Dims& shape, DType d, const char* op, const char* what) {
  if (x.numel() > 0 && !x.gt(0).all().item<bool>())
    fail("[random.", op, "] ", what, " must be positive, got a value <= 0 (or NaN) in ", x.shape());
  return x.to(d).expand(shape).contiguous();
}

}  // namespace

Tensor gamma(const Tensor& key, const Tensor& a, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "gamma");
  const Dims out_shape = shape_or(shape, a);
  const Tensor alpha = positive(a, out_shape, d, "gamma", "a");
  // Marsaglia and Tsang need a >= 1: below it, Gamma(a) = Gamma(a + 1) * U^(1/a).
  const Tensor boost = alpha.lt(1);
  const Tensor shifted = where(boost, alpha + 1, alpha);
  const Tensor dd = shifted - 1.0 / 3.0;
  const Tensor c = (dd * 9).rsqrt();
  Tensor result = zeros_like(alpha), done = zeros_like(alpha).to(DType::Bool);
  // Each round draws for every element and keeps the first acceptance: about 5% are rejected
  // per round (less for larger a), so a million draws need about six rounds.
  for (uint64_t round = 0;; ++round) {
    if (round == 1000) fail<RuntimeError>("[random.gamma] rejection sampling did not finish (a too small?)");
    const Tensor keys = split(fold_in(key, round), 2);
    const Tensor x = normal(keys.select(0, 0), out_shape, d);
    const Tensor u = open_uniform(keys.select(0, 1), out_shape, d);
    const Tensor v = (x * c + 1).pow(3);
    const Tensor positive_v = v.gt(0);
    const Tensor log_v = where(positive_v, v, ones_like(v)).log();
    const Tensor accept = positive_v.logical_and(u.log().lt(x * x * 0.5 + dd - dd * v + dd * log_v));
    const Tensor take = accept.logical_and(done.logical_not());
    result = where(take, dd * v, result);
    done = done.logical_or(accept);
    if (done.all().item<bool>()) break;
  }
  const Tensor u = open_uniform(fold_in(key, ~uint64_t{0}), out_shape, d);
  return where(boost, result * u.pow(alpha.reciprocal()), result);
}

Tensor beta(const Tensor& key, const Tensor& a, const Tensor& b, const std::optional<Dims>& shape,
            std::optional<DType> dtype) {
  const Shape s = shape ? Shape(shape->begin(), shape->end()) : broadcast_shapes(a.shape(), b.shape(), "random.beta");
  const Dims out(s.begin(), s.end());
  const Tensor keys = split(key, 2);
  const Tensor x = gamma(keys.select(0, 0), a, out, floating(dtype, "beta"));
  const Tensor y = gamma(keys.select(0, 1), b, out, floating(dtype, "beta"));
  return x / (x + y);
}

Tensor dirichlet(const Tensor& key, const Tensor& alpha, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  if (alpha.dim() < 1) fail("[random.dirichlet] alpha must have at least one dimension, got a scalar");
  Dims out = shape ? *shape : Dims(alpha.shape().begin(), alpha.shape().end() - 1);
  out.push_back(alpha.size(-1));
  const Tensor g = gamma(key, alpha, out, floating(dtype, "dirichlet"));
  return g / g.sum(Dims{-1}, true);
}

Tensor chisquare(const Tensor& key, const Tensor& df, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "chisquare");
  return gamma(key, df.to(d) / 2, shape_or(shape, df), d) * 2;
}

Tensor t(const Tensor& key, const Tensor& df, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "t");
  const Dims out = shape_or(shape, df);
  const Tensor keys = split(key, 2);
  const Tensor dof = positive(df, out, d, "t", "df");
  return normal(keys.select(0, 0), out, d) / (chisquare(keys.select(0, 1), dof, out, d) / dof).sqrt();
}

}  // namespace ug::random
