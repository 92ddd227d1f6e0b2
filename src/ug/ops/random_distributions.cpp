#include "ug/ops/random_distributions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <string>

#include "ug/core/thread_pool.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/gradient_graph.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/rules.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

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

const graph::OpDef kRejection("random_rejection");

/** draw(inputs) as one op: how many rounds of rejection a sampler takes depends on its draws,
 *  so a program calls the whole sampler back, rather than run the rounds its trace took (and
 *  leave the elements those did not accept at 0). */
Tensor one_draw(const char* sampler, const graph::Tensors& inputs, std::function<Tensor(const graph::Tensors&)> draw) {
  graph::OpCall call(kRejection);
  Tensor out = draw(inputs);
  if (call.capturing()) {
    call.set_attrs({{"sampler", std::string(sampler)}});
    call.set_replay([draw = std::move(draw)](const graph::Tensors& in) { return graph::Tensors{draw(in)}; });
  }
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  call.finish(in, {&out});
  return out;
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

/** `shape`, or the broadcast of the parameters' shapes when none is given. */
Dims shape_or(const std::optional<Dims>& shape, std::initializer_list<const Tensor*> params, const char* op) {
  if (shape) return *shape;
  Shape s;
  for (const Tensor* x : params) s = broadcast_shapes(s, x->shape(), op);
  return Dims(s.begin(), s.end());
}
Dims shape_or(const std::optional<Dims>& shape, const Tensor& x) { return shape_or(shape, {&x}, "random"); }

/** A parameter as a contiguous tensor of `shape` in dtype d, on the CPU, where the draws are. */
Tensor spread(const Tensor& x, const Dims& shape, DType d, const std::string& op, const char* what) {
  const Shape s(shape.begin(), shape.end());
  if (broadcast_shapes(x.shape(), s, op.c_str()) != s)
    fail("[", op, "] ", what, " of shape ", x.shape(), " does not broadcast to the shape ", s);
  return x.to(Device{}).to(d).expand(shape).contiguous();
}

/** Fails unless every element of `ok` holds (NaN parameters make it false). */
void require(const Tensor& ok, const char* op, const char* what, const Tensor& x) {
  if (x.numel() > 0 && !ops::all_true(ok))
    fail("[", op, "] ", what, ", got another value (in a tensor of shape ", x.shape(), ")");
}

/** A parameter of a distribution as a floating tensor of `shape`, checked positive. */
Tensor positive(const Tensor& x, const Dims& shape, DType d, const char* op, const char* what) {
  if (x.numel() > 0 && !ops::all_true(x.gt(0)))
    fail("[random.", op, "] ", what, " must be positive, got a value <= 0 (or NaN) in ", x.shape());
  return spread(x, shape, d, std::string("random.") + op, what);
}

/** Marsaglia and Tsang's Gamma draws, finished by gamma and loggamma: `draw` is Gamma(a + 1)
 *  where a < 1 (`boost`; Gamma(a) = Gamma(a + 1) * U^(1/a) with the uniform `u`), else Gamma(a). */
struct BoostedGamma {
  Tensor draw, alpha, boost, u;
};

BoostedGamma boosted_gamma(const Tensor& key, const Tensor& a, const std::optional<Dims>& shape, DType d,
                           const char* op) {
  const Dims out_shape = shape_or(shape, a);
  const Tensor alpha = positive(a, out_shape, d, op, "a");
  const Tensor boost = alpha.lt(1);
  const Tensor shifted = where(boost, alpha + 1, alpha);
  const Tensor dd = shifted - 1.0 / 3.0;
  const Tensor c = (dd * 9).rsqrt();
  Tensor result = zeros_like(alpha), done = zeros_like(alpha).to(DType::Bool);
  // Each round draws for every element and keeps the first acceptance: about 5% are rejected
  // per round (less for larger a), so a million draws need about six rounds.
  for (uint64_t round = 0;; ++round) {
    if (round == 1000) fail<RuntimeError>("[random.", op, "] rejection sampling did not finish (a too small?)");
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
    if (ops::all_true(done)) break;  // every example's draws, under vmap
  }
  return {result, alpha, boost, open_uniform(fold_in(key, ~uint64_t{0}), out_shape, d)};
}

}  // namespace

namespace {

constexpr int kGammaGradTerms = 300;     // the most terms a series or continued fraction takes
constexpr double kGammaGradTol = 1e-15;  // relative size of the term that ends one

/** gamma_grad written with ops (about 4800 of them): what the kernel computes, but
 *  differentiable, so that a derivative of the gradient (or its forward mode) can be taken. */
Tensor gamma_grad_ops(const Tensor& a, const Tensor& x) {
  const DType d = to_floating(promote_types(a.dtype(), x.dtype()));
  const auto b = broadcast_tensors({a.to(DType::Float64), x.to(DType::Float64)});
  const Tensor ok = (b[0] > 0.0).logical_and(b[1] > 0.0).logical_and(isfinite(b[1]));
  const Tensor sa = where(ok, b[0], 1.0), sx = where(ok, b[1], 1.0);
  const Tensor lead = sx.log() - digamma(sa);  // d/da log(x^a e^-x / Gamma(a))
  // Below x = a + 1, P = x^a e^-x / Gamma(a) * sum_k x^k / (a (a + 1) ... (a + k)): the sum
  // and its derivative in a term by term; dx/da = -x (sum * lead + dsum/da).
  const Tensor by_series = sx < sa + 1.0;
  const Tensor xs = where(by_series, sx, 0.0);
  Tensor term = sa.reciprocal(), dterm = -term / sa, sum = term, dsum = dterm;
  for (int k = 1; k <= kGammaGradTerms; ++k) {
    const Tensor ak = sa + static_cast<double>(k), r = xs / ak;
    term = term * r;
    dterm = dterm * r - term / ak;
    sum = sum + term;
    dsum = dsum + dterm;
  }
  // Above, Q = x^a e^-x / Gamma(a) / t with igamma's continued fraction t, differentiated
  // from the bottom up with it; dx/da = x (lead / t - dt/da / t^2).
  const Tensor xf = where(by_series, sa + 1.0, sx);
  Tensor t = xf + (2.0 * kGammaGradTerms + 1.0) - sa, dt = full_like(t, -1.0);
  for (int i = kGammaGradTerms; i >= 1; --i) {
    const double n = i;
    const Tensor next = (xf + (2.0 * n - 1.0) - sa) - n * (n - sa) / t;
    dt = n / t + n * (n - sa) * dt / t.square() - 1.0;
    t = next;
  }
  const Tensor exact = where(by_series, -sx * (sum * lead + dsum), sx * (lead / t - dt / t.square()));
  // Past a = 2500 the sums above are cut short near x = a: there Wilson and Hilferty's
  // x = a (1 - 1/(9a) + z / (3 sqrt(a)))^3, differentiated at fixed z, is closer (~1e-6).
  const Tensor w = (sx / sa).pow(1.0 / 3.0), z = (w - 1.0 + (sa * 9.0).reciprocal()) * sa.sqrt() * 3.0;
  const Tensor large =
      w.pow(3.0) + sa * w.square() * 3.0 * ((sa.square() * 9.0).reciprocal() - z / (sa.pow(1.5) * 6.0));
  return where(ok, where(sa > 2500.0, large, exact), 0.0).to(d);
}

double digamma_of(double a) {
  double shift = 0;
  for (; a < 10; a += 1) shift -= 1 / a;
  const double r = 1 / (a * a);  // the asymptotic series, Bernoulli numbers B_2k / (2k)
  return shift + std::log(a) - 0.5 / a -
         r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * 691.0 / 32760)))));
}

/** dx/da for one element: gamma_grad_ops's formula, each sum stopped once it has converged. */
double gamma_grad_of(double a, double x) {
  if (!(a > 0 && x > 0 && std::isfinite(x))) return 0;
  if (a > 2500) {  // Wilson and Hilferty, as in gamma_grad_ops
    const double w = std::cbrt(x / a), z = (w - 1 + 1 / (9 * a)) * std::sqrt(a) * 3;
    return w * w * w + a * w * w * 3 * (1 / (9 * a * a) - z / (std::pow(a, 1.5) * 6));
  }
  const double lead = std::log(x) - digamma_of(a);
  if (x < a + 1) {
    double term = 1 / a, dterm = -term / a, sum = term, dsum = dterm;
    for (int k = 1; k <= kGammaGradTerms; ++k) {
      const double ak = a + k, r = x / ak;
      term *= r;
      dterm = dterm * r - term / ak;
      sum += term;
      dsum += dterm;
      if (std::abs(term) <= kGammaGradTol * sum && std::abs(dterm) <= kGammaGradTol * std::abs(dsum)) break;
    }
    return -x * (sum * lead + dsum);
  }
  // The continued fraction t = b0 + a1 / (b1 + a2 / (b2 + ...)), b_n = x + 2n + 1 - a,
  // a_n = -n (n - a), by its convergents A/B from the top down (so that it can stop), each
  // with its derivative in a; every step divides by B, which keeps them finite.
  double A0 = 1, B0 = 0, dA0 = 0, dB0 = 0;           // n - 2
  double A1 = x + 1 - a, B1 = 1, dA1 = -1, dB1 = 0;  // n - 1
  double t = A1, dt = -1;
  for (int n = 1; n <= kGammaGradTerms; ++n) {
    const double bn = x + 2.0 * n + 1 - a, an = -n * (n - a);
    const double A = bn * A1 + an * A0, B = bn * B1 + an * B0;
    const double dA = bn * dA1 - A1 + an * dA0 + n * A0, dB = bn * dB1 - B1 + an * dB0 + n * B0;
    const double s = 1 / B;
    A0 = A1 * s, B0 = B1 * s, dA0 = dA1 * s, dB0 = dB1 * s;
    A1 = A * s, B1 = 1, dA1 = dA * s, dB1 = dB * s;
    const double next = A1, dnext = dA1 - A1 * dB1;  // (dA B - A dB) / B^2 with B = 1
    const bool done =
        std::abs(next - t) <= kGammaGradTol * std::abs(next) && std::abs(dnext - dt) <= kGammaGradTol * std::abs(dnext);
    t = next, dt = dnext;
    if (done) break;
  }
  return x * (lead / t - dt / (t * t));
}

const graph::OpDef kGammaGrad("random_gamma_grad");

/** gamma_grad as one kernel, a loop over the elements: an op without a derivative of its own
 *  (gamma_grad takes gamma_grad_ops where one is wanted). */
Tensor gamma_grad_kernel(const Tensor& a, const Tensor& x) {
  graph::OpCall call(kGammaGrad);
  const DType d = to_floating(promote_types(a.dtype(), x.dtype()));
  const auto b = broadcast_tensors({a.to(DType::Float64), x.to(DType::Float64)});
  Tensor out;
  if (const int lvl = batching::max_level({&b[0], &b[1]})) {
    // Both are broadcast to the logical shape: the physical tensors line up.
    out = batching::wrap(gamma_grad_kernel(batching::physical(b[0], lvl), batching::physical(b[1], lvl)), lvl).to(d);
  } else {
    const Tensor ac = b[0].to(Device{}).contiguous(), xc = b[1].to(Device{}).contiguous();
    Tensor values = empty(Dims(ac.shape().begin(), ac.shape().end()), {.dtype = DType::Float64});
    const double *pa = static_cast<const double*>(ac.raw_data()), *px = static_cast<const double*>(xc.raw_data());
    double* po = static_cast<double*>(values.raw_data());
    parallel_for(values.numel(), 256, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) po[i] = gamma_grad_of(pa[i], px[i]);
    });
    out = values.to(d).to(a.device());
  }
  if (call.capturing())
    call.set_replay([](const graph::Tensors& in) { return graph::Tensors{gamma_grad(in[0], in[1])}; },
                    graph::ReplaySizes::None);
  call.finish({&a, &x}, {&out});
  return out;
}

}  // namespace

Tensor gamma_grad(const Tensor& a, const Tensor& x) {
  const bool differentiated =
      autograd::needs_grad({&a, &x}) || (forward::active() && (forward::has_tangent(a) || forward::has_tangent(x)));
  return differentiated ? gamma_grad_ops(a, x) : gamma_grad_kernel(a, x);
}

const graph::OpDef kGamma("random_gamma");

Tensor gamma(const Tensor& key, const Tensor& a, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "gamma");
  graph::OpCall call(kGamma);
  Tensor out;
  {
    // The draw's ops are the sampler's, not its derivative: they record nothing.
    NoGradGuard no_grad;
    const BoostedGamma g = boosted_gamma(key, a.detach(), shape, d, "gamma");
    out = where(g.boost, g.draw * g.u.pow(g.alpha.reciprocal()), g.draw);
  }
  if (call.capturing()) {
    // As one_draw: a program calls the sampler back, here with its derivative.
    call.set_replay([shape, d](const graph::Tensors& in) { return graph::Tensors{gamma(in[0], in[1], shape, d)}; });
  }
  const Shape a_shape = a.shape();
  call.finish(
      {&key, &a}, {&out}, {graph::input(a), graph::output(out)},
      [a_shape](Saved saved, graph::Tensors&& g) {
        // Without a graph of the gradient asked for, the kernel (no derivative of its own) does.
        const Tensor dx =
            graph::gradient_graph_requested() ? gamma_grad(saved[0], saved[1]) : gamma_grad_kernel(saved[0], saved[1]);
        const Tensor da = autograd::sum_to(g[0] * dx, a_shape);
        return graph::Tensors{Tensor(), da.to(saved[0].dtype())};
      },
      [&](const graph::Tensors& t) { return graph::Tensors{t[1] * gamma_grad(a, out)}; });
  return out;
}

namespace {
const graph::OpDef kLogGamma("random_loggamma");

/** d log(x) / da at the draw log_x: gamma_grad(a, x) / x, with x taken in float64 and, where
 *  it still underflows (a below ~1e-3), the smallest normal number, as JAX's loggamma does. */
Tensor loggamma_grad(const Tensor& a, const Tensor& log_x, bool differentiable) {
  const Tensor e = log_x.to(DType::Float64).exp();
  const Tensor x = where(e == 0.0, std::numeric_limits<double>::min(), e).to(DType::Float64);
  return ((differentiable ? gamma_grad(a, x) : gamma_grad_kernel(a, x)) / x).to(log_x.dtype());
}
}  // namespace

Tensor loggamma(const Tensor& key, const Tensor& a, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "loggamma");
  graph::OpCall call(kLogGamma);
  Tensor out;
  {
    NoGradGuard no_grad;  // as gamma: the sampler's ops are not its derivative
    const BoostedGamma g = boosted_gamma(key, a.detach(), shape, d, "loggamma");
    out = g.draw.log() + where(g.boost, g.u.log() / g.alpha, 0);
  }
  if (call.capturing())
    call.set_replay([shape, d](const graph::Tensors& in) { return graph::Tensors{loggamma(in[0], in[1], shape, d)}; });
  // The implicit reparameterisation gradient, as gamma's: differentiating the sampler's own
  // ops instead (through the boost and the accepted Marsaglia-Tsang transform) is biased.
  const Shape a_shape = a.shape();
  call.finish(
      {&key, &a}, {&out}, {graph::input(a), graph::output(out)},
      [a_shape](Saved saved, graph::Tensors&& g) {
        const Tensor dx = loggamma_grad(saved[0], saved[1], graph::gradient_graph_requested());
        return graph::Tensors{Tensor(), autograd::sum_to(g[0] * dx, a_shape).to(saved[0].dtype())};
      },
      [&](const graph::Tensors& t) { return graph::Tensors{t[1] * loggamma_grad(a, out, true)}; });
  return out;
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

Tensor generalized_normal(const Tensor& key, double p, const Dims& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "generalized_normal");
  if (!(p > 0)) fail("[random.generalized_normal] p must be positive, got ", p);
  const Tensor keys = split(key, 2);
  // |x|^p ~ Gamma(1 / p); its log keeps |x| from rounding to 0 where 1 / p is large.
  const Tensor magnitude = (loggamma(keys.select(0, 0), scalar_tensor(1 / p, {.dtype = d}), shape, d) / p).exp();
  return where(bernoulli(keys.select(0, 1), 0.5, shape), magnitude, -magnitude);
}

Tensor ball(const Tensor& key, int64_t d, double p, const Dims& shape, std::optional<DType> dtype) {
  const DType dt = floating(dtype, "ball");
  if (d < 1) fail("[random.ball] d must be positive, got ", d);
  if (!(p > 0)) fail("[random.ball] p must be positive, got ", p);
  Dims points = shape;
  points.push_back(d);
  const Tensor keys = split(key, 2);
  const Tensor g = generalized_normal(keys.select(0, 0), p, points, dt);
  const Tensor e = exponential(keys.select(0, 1), shape, dt);
  return g / (g.abs().pow(p).sum(Dims{-1}) + e).pow(1 / p).unsqueeze(-1);
}

namespace {

/** Rejection sampling of `count` float64 values: each round calls attempt(round key, indices)
 *  for (accepted, values) of the elements at those indices, keeps the accepted values and tries
 *  the rest again with the next round's key. */
template <class Attempt> Tensor until_accepted(const Tensor& key, int64_t count, const char* op, Attempt attempt) {
  Tensor out = zeros({count}, {.dtype = DType::Float64});
  Tensor pending = arange(0, count, 1, {.dtype = DType::Int64});
  for (uint64_t round = 0; pending.numel() > 0; ++round) {
    if (round == 1000) fail<RuntimeError>("[", op, "] rejection sampling did not finish");
    const auto [accept, values] = attempt(fold_in(key, round), pending);
    out = index_copy(out, 0, pending.masked_select(accept), values.masked_select(accept));
    pending = pending.masked_select(accept.logical_not());
  }
  return out;
}

/** The flat indices where `mask` holds. */
Tensor where_true(const Tensor& mask) { return mask.nonzero().reshape({-1}); }

/** Inversion by sequential search: the least k with u <= P(X <= k), the probabilities walked up
 *  from p0 by p_k = p_{k-1} * ratio(k, i) for the elements i still walking, while k < limit. Each
 *  step walks only the elements whose u is above the sum so far: about mean + 1 steps each. */
template <class Ratio> Tensor search(const Tensor& key, const Tensor& p0, const Tensor& limit, Ratio ratio) {
  const Tensor u = uniform(key, {p0.numel()}, 0, 1, DType::Float64);
  Tensor k = zeros_like(u);
  // Whether the elements at i walk on past `step`; p reaching 0 stops them where rounding keeps
  // the summed probabilities below u.
  auto on = [&](const Tensor& i, double step, const Tensor& p, const Tensor& cdf) {
    return cdf.lt(u.index_select(0, i)).logical_and(limit.index_select(0, i).gt(step)).logical_and(p.gt(0));
  };
  Tensor i = where_true(p0.lt(u).logical_and(limit.gt(0)));
  Tensor p = p0.index_select(0, i), cdf = p;
  for (double step = 1; i.numel() > 0; ++step) {
    k = index_copy(k, 0, i, full({i.numel()}, step, {.dtype = DType::Float64}));
    p = p * ratio(step, i);
    cdf = cdf + p;
    const Tensor more = on(i, step, p, cdf);
    i = i.masked_select(more);
    p = p.masked_select(more);
    cdf = cdf.masked_select(more);
  }
  return k;
}

/** Poisson(rate) counts as float64 for a flat float64 rate, checked by the caller. */
Tensor poisson_counts(const Tensor& key, const Tensor& rate) {
  const Tensor keys = split(key, 2);
  const Tensor small = rate.lt(10), idx = where_true(small), low = rate.index_select(0, idx);
  const Tensor no_limit = full_like(low, std::numeric_limits<double>::infinity());
  Tensor out = index_copy(zeros_like(rate), 0, idx,
                          search(keys.select(0, 0), (-low).exp(), no_limit,
                                 [&](double k, const Tensor& i) { return low.index_select(0, i) / k; }));
  // Hoermann's PTRS (1993) for rate >= 10: a transformed-rejection proposal, a quick acceptance
  // region, and the exact test against the Poisson probability otherwise.
  const Tensor big = where_true(small.logical_not()), lam = rate.index_select(0, big);
  const Tensor log_lam = lam.log(), b = lam.sqrt() * 2.53 + 0.931, a = b * 0.02483 - 0.059;
  const Tensor log_inv_alpha = (1.1328 / (b - 3.4) + 1.1239).log(), vr = 0.9277 - 3.6224 / (b - 2);
  return index_copy(
      out, 0, big,
      until_accepted(keys.select(0, 1), big.numel(), "random.poisson", [&](const Tensor& round_key, const Tensor& i) {
        const Tensor uv = split(round_key, 2);
        const int64_t m = i.numel();
        const Tensor u = uniform(uv.select(0, 0), {m}, -0.5, 0.5, DType::Float64);
        const Tensor v = uniform(uv.select(0, 1), {m}, 0, 1, DType::Float64);
        const Tensor l = lam.index_select(0, i), ai = a.index_select(0, i);
        const Tensor bi = b.index_select(0, i), us = 0.5 - u.abs();
        const Tensor k = ((ai * 2 / us + bi) * u + l + 0.43).floor();
        const Tensor quick = us.ge(0.07).logical_and(v.le(vr.index_select(0, i)));
        const Tensor reject = k.lt(0).logical_or(us.lt(0.013).logical_and(v.gt(us)));
        const Tensor exact = (v.log() + log_inv_alpha.index_select(0, i) - (ai / (us * us) + bi).log())
                                 .le(-l + k * log_lam.index_select(0, i) - lgamma(k + 1));
        return std::pair{quick.logical_or(reject.logical_not().logical_and(exact)), k};
      }));
}

/** Binomial(n, p) counts as float64 for flat float64 n and p, checked by the caller. */
Tensor binomial_counts(const Tensor& key, const Tensor& n, const Tensor& p) {
  // Draw for q = min(p, 1 - p) <= 1/2 and count the failures where p > 1/2.
  const Tensor flip = p.gt(0.5), q = where(flip, 1.0 - p, p);
  const Tensor keys = split(key, 2);
  const Tensor small = (n * q).lt(10), idx = where_true(small);
  const Tensor ns = n.index_select(0, idx), qs = q.index_select(0, idx), odds = qs / (1.0 - qs);
  Tensor out = index_copy(zeros_like(n), 0, idx,
                          search(keys.select(0, 0), (ns * (-qs).log1p()).exp(), ns, [&](double k, const Tensor& i) {
                            return (ns.index_select(0, i) - (k - 1)) / k * odds.index_select(0, i);
                          }));
  // Hoermann's BTRS (1993) for n q >= 10, with the exact test by log-factorials.
  const Tensor big = where_true(small.logical_not());
  const Tensor nn = n.index_select(0, big), qq = q.index_select(0, big);
  const Tensor spq = (nn * qq * (1.0 - qq)).sqrt();
  const Tensor b = spq * 2.53 + 1.15, a = b * 0.0248 + qq * 0.01 - 0.0873, c = nn * qq + 0.5;
  const Tensor vr = 0.92 - 4.2 / b, log_alpha = ((5.1 / b + 2.83) * spq).log(), lpq = (qq / (1.0 - qq)).log();
  const Tensor m = ((nn + 1) * qq).floor(), h = lgamma(m + 1) + lgamma(nn - m + 1);
  out = index_copy(
      out, 0, big,
      until_accepted(keys.select(0, 1), big.numel(), "random.binomial", [&](const Tensor& round_key, const Tensor& i) {
        const Tensor uv = split(round_key, 2);
        const int64_t cnt = i.numel();
        const Tensor u = uniform(uv.select(0, 0), {cnt}, -0.5, 0.5, DType::Float64);
        const Tensor v = uniform(uv.select(0, 1), {cnt}, 0, 1, DType::Float64);
        const Tensor ni = nn.index_select(0, i), ai = a.index_select(0, i);
        const Tensor bi = b.index_select(0, i), us = 0.5 - u.abs();
        const Tensor k = ((ai * 2 / us + bi) * u + c.index_select(0, i)).floor();
        const Tensor inside = k.ge(0).logical_and(k.le(ni));
        const Tensor quick = us.ge(0.07).logical_and(v.le(vr.index_select(0, i)));
        const Tensor exact = (v.log() + log_alpha.index_select(0, i) - (ai / (us * us) + bi).log())
                                 .le(h.index_select(0, i) - lgamma(k + 1) - lgamma(ni - k + 1) +
                                     (k - m.index_select(0, i)) * lpq.index_select(0, i));
        return std::pair{inside.logical_and(quick.logical_or(exact)), k};
      }));
  return where(flip, n - out, out);
}

/** Trials up to the first success, as float64, for a flat float64 p in (0, 1]. */
Tensor geometric_counts(const Tensor& key, const Tensor& p) {
  return (open_uniform(key, {p.numel()}, DType::Float64).log() / (-p).log1p()).floor() + 1;
}

/** float64 counts in dtype d, clamped to an integer dtype's range (a tiny p's counts overflow). */
Tensor counts_as(const Tensor& x, DType d) {
  if (!is_integral(d)) return x.to(d);
  const bool is_unsigned = d == DType::UInt8 || is_shell(d);
  const int bits = 8 * static_cast<int>(itemsize(d)) - (is_unsigned ? 0 : 1);
  return x.clamp(std::nullopt, Scalar(std::min(std::ldexp(1.0, bits) - 1, 9.2e18))).to(d);
}

/** Checked flat float64 parameters of a count distribution. */
Tensor rates(const Tensor& lam, const Dims& shape, const char* op) {
  require(lam.ge(0).logical_and(lam.isfinite()), op, "rates (lam) must be finite and >= 0", lam);
  return spread(lam, shape, DType::Float64, op, "lam").reshape({-1});
}
Tensor probabilities(const Tensor& p, const Dims& shape, const char* op, bool zero_allowed) {
  require((zero_allowed ? p.ge(0) : p.gt(0)).logical_and(p.le(1)), op,
          zero_allowed ? "p must be in [0, 1]" : "p must be in (0, 1]", p);
  return spread(p, shape, DType::Float64, op, "p").reshape({-1});
}
Tensor trials(const Tensor& n, const Dims& shape, const char* op) {
  require(n.ge(0).logical_and(n.isfinite()).logical_and(n.eq(n.floor())), op, "n must be a whole number >= 0", n);
  return spread(n, shape, DType::Float64, op, "n").reshape({-1});
}

}  // namespace

Tensor poisson(const Tensor& key, const Tensor& lam, const std::optional<Dims>& shape, DType dtype) {
  const Dims out = shape_or(shape, lam);
  return one_draw("poisson", {key, lam}, [out, dtype](const graph::Tensors& in) {
    return counts_as(poisson_counts(in[0], rates(in[1], out, "random.poisson")), dtype).reshape(out);
  });
}

Tensor binomial(const Tensor& key, const Tensor& n, const Tensor& p, const std::optional<Dims>& shape,
                std::optional<DType> dtype) {
  const DType d = floating(dtype, "binomial");
  const Dims out = shape_or(shape, {&n, &p}, "random.binomial");
  return one_draw("binomial", {key, n, p}, [out, d](const graph::Tensors& in) {
    return binomial_counts(in[0], trials(in[1], out, "random.binomial"),
                           probabilities(in[2], out, "random.binomial", true))
        .to(d)
        .reshape(out);
  });
}

Tensor geometric(const Tensor& key, const Tensor& p, const std::optional<Dims>& shape, DType dtype) {
  const Dims out = shape_or(shape, p);
  return counts_as(geometric_counts(key, probabilities(p, out, "random.geometric", false)), dtype).reshape(out);
}

Tensor weibull_min(const Tensor& key, const Tensor& scale, const Tensor& concentration,
                   const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "weibull_min");
  const Dims out = shape_or(shape, {&scale, &concentration}, "random.weibull_min");
  const Tensor k = positive(concentration, out, d, "weibull_min", "concentration");
  return positive(scale, out, d, "weibull_min", "scale") * exponential(key, out, d).pow(k.reciprocal());
}

Tensor pareto(const Tensor& key, const Tensor& b, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "pareto");
  const Dims out = shape_or(shape, b);
  return (exponential(key, out, d) / positive(b, out, d, "pareto", "b")).exp();
}

Tensor rayleigh(const Tensor& key, const Tensor& scale, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "rayleigh");
  const Dims out = shape_or(shape, scale);
  return positive(scale, out, d, "rayleigh", "scale") * (exponential(key, out, d) * 2).sqrt();
}

Tensor maxwell(const Tensor& key, const Dims& shape, std::optional<DType> dtype) {
  Dims vectors = shape;
  vectors.push_back(3);
  return normal(key, vectors, floating(dtype, "maxwell")).square().sum(Dims{-1}).sqrt();
}

Tensor double_sided_maxwell(const Tensor& key, const Tensor& loc, const Tensor& scale, const std::optional<Dims>& shape,
                            std::optional<DType> dtype) {
  const DType d = floating(dtype, "double_sided_maxwell");
  const Dims out = shape_or(shape, {&loc, &scale}, "random.double_sided_maxwell");
  const Tensor keys = split(key, 2);
  const Tensor s = positive(scale, out, d, "double_sided_maxwell", "scale");
  const Tensor x = maxwell(keys.select(0, 0), out, d) * s;
  return spread(loc, out, d, "random.double_sided_maxwell", "loc") +
         where(bernoulli(keys.select(0, 1), 0.5, out), x, -x);
}

Tensor wald(const Tensor& key, const Tensor& mean, const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "wald");
  const Dims out = shape_or(shape, mean);
  const Tensor mu = positive(mean, out, d, "wald", "mean");
  const Tensor keys = split(key, 2);
  // Michael, Schucany and Haas: the smaller root of the quadratic for y = z^2, here as
  // mu / (1 + w + sqrt(w (w + 2))) with w = mu y / 2, which does not cancel for large w.
  const Tensor w = normal(keys.select(0, 0), out, d).square() * mu * 0.5;
  const Tensor x = mu / (w + 1 + (w * (w + 2)).sqrt());
  return where((uniform(keys.select(0, 1), out, 0, 1, d) * (mu + x)).le(mu), x, mu * mu / x);
}

Tensor triangular(const Tensor& key, const Tensor& left, const Tensor& mode, const Tensor& right,
                  const std::optional<Dims>& shape, std::optional<DType> dtype) {
  const DType d = floating(dtype, "triangular");
  const Dims out = shape_or(shape, {&left, &mode, &right}, "random.triangular");
  const Tensor lo = spread(left, out, d, "random.triangular", "left"),
               c = spread(mode, out, d, "random.triangular", "mode");
  const Tensor hi = spread(right, out, d, "random.triangular", "right");
  require(lo.le(c).logical_and(c.le(hi)).logical_and(lo.lt(hi)), "random.triangular",
          "needs left <= mode <= right and left < right", lo);
  const Tensor u = uniform(key, out, 0, 1, d), width = hi - lo;
  return where((u * width).lt(c - lo), lo + (u * width * (c - lo)).sqrt(), hi - ((1 - u) * width * (hi - c)).sqrt());
}

}  // namespace ug::random

namespace ug {

namespace {

/** A key drawn from the global generator: torch's spellings share the keyed samplers. */
Tensor generator_key() { return randint(0, int64_t{1} << 32, {2}); }

Dims dims_of(const Tensor& t) { return Dims(t.shape().begin(), t.shape().end()); }

void require_floating(const Tensor& t, const char* op) {
  if (!t.is_floating_point()) fail<TypeError>("[", op, "] expects a floating tensor, got ", t.dtype());
}

/** The dtype an in-place fill draws in: at least float32, whose smallest uniform keeps the
 *  logarithms finite where a 16-bit one would round to 0. */
DType fill_dtype(const Tensor& t) { return t.dtype() == DType::Float64 ? DType::Float64 : DType::Float32; }

}  // namespace

Tensor poisson(const Tensor& rates) {
  require_floating(rates, "poisson");
  const Dims shape = dims_of(rates);
  return random::poisson_counts(generator_key(), random::rates(rates, shape, "poisson"))
      .reshape(shape)
      .to(rates.dtype())
      .to(rates.device());
}

Tensor standard_gamma(const Tensor& alpha) {
  require_floating(alpha, "_standard_gamma");
  return random::gamma(generator_key(), alpha, std::nullopt, alpha.dtype()).to(alpha.device());
}

Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x) { return random::gamma_grad(alpha, x); }

Tensor binomial(const Tensor& count, const Tensor& prob) {
  require_floating(count, "binomial");
  require_floating(prob, "binomial");
  if (count.dtype() != prob.dtype())
    fail<TypeError>("[binomial] expects count and prob of one dtype, got ", count.dtype(), " and ", prob.dtype());
  const Shape s = broadcast_shapes(count.shape(), prob.shape(), "binomial");
  const Dims shape(s.begin(), s.end());
  return random::binomial_counts(generator_key(), random::trials(count, shape, "binomial"),
                                 random::probabilities(prob, shape, "binomial", true))
      .reshape(shape)
      .to(count.dtype())
      .to(count.device());
}

Tensor& geometric_(Tensor& t, double p) {
  const Dims shape = dims_of(t);
  const Tensor probability = scalar_tensor(p, {.dtype = DType::Float64});
  return t.copy_(random::counts_as(random::geometric_counts(
                                       generator_key(), random::probabilities(probability, shape, "geometric_", false)),
                                   t.dtype())
                     .reshape(shape));
}

// Declared in random.h beside the other in-place fills; drawn here by the keyed sampler.
Tensor& exponential_(Tensor& t, double lambd) {
  require_floating(t, "exponential_");
  if (!(lambd > 0)) fail("[exponential_] lambd must be positive, got ", lambd);
  return t.copy_(random::exponential(generator_key(), dims_of(t), fill_dtype(t)) / lambd);
}

Tensor& cauchy_(Tensor& t, double median, double sigma) {
  require_floating(t, "cauchy_");
  if (!(sigma > 0)) fail("[cauchy_] sigma must be positive, got ", sigma);
  return t.copy_(random::cauchy(generator_key(), dims_of(t), fill_dtype(t)) * sigma + median);
}

Tensor& log_normal_(Tensor& t, double mean, double std) {
  require_floating(t, "log_normal_");
  if (!(std > 0)) fail("[log_normal_] std must be positive, got ", std);
  return t.copy_((random::normal(generator_key(), dims_of(t), fill_dtype(t)) * std + mean).exp());
}

}  // namespace ug
