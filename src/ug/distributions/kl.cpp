#include "ug/distributions/kl.h"

#include <algorithm>
#include <limits>
#include <numbers>

#include "ug/core/error.h"
#include "ug/distributions/continuous.h"
#include "ug/distributions/discrete.h"
#include "ug/distributions/gamma.h"
#include "ug/distributions/matrix.h"
#include "ug/distributions/multivariate.h"
#include "ug/distributions/transformed.h"
#include "ug/distributions/univariate.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/linalg.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor softplus(const Tensor& x) { return x.logaddexp(0); }

Tensor kl(const Normal& p, const Normal& q) {
  Tensor var_ratio = (p.scale() / q.scale()).square();
  Tensor t1 = ((p.loc() - q.loc()) / q.scale()).square();
  return 0.5 * (var_ratio + t1 - 1 - var_ratio.log());
}

Tensor kl(const Bernoulli& p, const Bernoulli& q) {
  Tensor t1 = p.probs() * (softplus(-q.logits()) - softplus(-p.logits()));
  t1 = where(p.probs().eq(0), zeros_like(t1), where(q.probs().eq(0), full_like(t1, kInf), t1));
  Tensor t2 = (1 - p.probs()) * (softplus(q.logits()) - softplus(p.logits()));
  t2 = where(p.probs().eq(1), zeros_like(t2), where(q.probs().eq(1), full_like(t2, kInf), t2));
  return t1 + t2;
}

Tensor kl(const Categorical& p, const Categorical& q) {
  Tensor t = p.probs() * (p.logits() - q.logits());
  t = where(p.probs().eq(0), zeros_like(t), where(q.probs().eq(0), full_like(t, kInf), t));
  return t.sum({-1});
}

Tensor kl(const OneHotCategorical& p, const OneHotCategorical& q) {
  Tensor t = p.probs() * (p.logits() - q.logits());
  t = where(p.probs().eq(0), zeros_like(t), where(q.probs().eq(0), full_like(t, kInf), t));
  return t.sum({-1});
}

Tensor kl(const Geometric& p, const Geometric& q) {
  return -p.entropy() - (-q.probs()).log1p() / p.probs() - q.logits();
}

Tensor kl(const Exponential& p, const Exponential& q) {
  Tensor ratio = q.rate() / p.rate();
  return ratio - ratio.log() - 1;
}

Tensor kl(const Laplace& p, const Laplace& q) {
  Tensor scale_ratio = p.scale() / q.scale();
  Tensor distance = (p.loc() - q.loc()).abs();
  return -scale_ratio.log() + distance / q.scale() + scale_ratio * (-distance / p.scale()).exp() - 1;
}

Tensor kl(const Cauchy& p, const Cauchy& q) {
  return ((p.scale() + q.scale()).square() + (p.loc() - q.loc()).square()).log() - (4 * p.scale() * q.scale()).log();
}

Tensor kl(const HalfNormal& p, const HalfNormal& q) {
  // The Normals' KL at equal locations.
  Tensor var_ratio = (p.scale() / q.scale()).square();
  return 0.5 * (var_ratio - 1 - var_ratio.log());
}

Tensor kl(const Gumbel& p, const Gumbel& q) {
  const Tensor ct1 = p.scale() / q.scale(), ct2 = q.loc() / q.scale(), ct3 = p.loc() / q.scale();
  return -ct1.log() - ct2 + ct3 + ct1 * std::numbers::egamma + (ct2 + lgamma(1 + ct1) - ct3).exp() -
         (1 + std::numbers::egamma);
}

Tensor kl(const Pareto& p, const Pareto& q) {
  const Tensor alpha_ratio = q.alpha() / p.alpha();
  const Tensor r = q.alpha() * (p.scale() / q.scale()).log() - alpha_ratio.log() + alpha_ratio - 1;
  return where(p.scale().lt(q.scale()), kInf, r);  // p puts mass below q's support
}

Tensor kl(const Gamma& p, const Gamma& q) {
  const Tensor &pc = p.concentration(), &qc = q.concentration();
  return qc * (p.rate() / q.rate()).log() + lgamma(qc) - lgamma(pc) + (pc - qc) * digamma(pc) +
         (q.rate() - p.rate()) * (pc / p.rate());
}

Tensor kl(const Beta& p, const Beta& q) {
  const Tensor sum_p = p.concentration1() + p.concentration0(), sum_q = q.concentration1() + q.concentration0();
  return lgamma(q.concentration1()) + lgamma(q.concentration0()) + lgamma(sum_p) - lgamma(p.concentration1()) -
         lgamma(p.concentration0()) - lgamma(sum_q) +
         (p.concentration1() - q.concentration1()) * digamma(p.concentration1()) +
         (p.concentration0() - q.concentration0()) * digamma(p.concentration0()) + (sum_q - sum_p) * digamma(sum_p);
}

Tensor kl(const Dirichlet& p, const Dirichlet& q) {
  const Tensor &pc = p.concentration(), &qc = q.concentration();
  const Tensor sum_p = pc.sum({-1}), sum_q = qc.sum({-1});
  const Tensor cross = ((pc - qc) * (digamma(pc) - digamma(sum_p).unsqueeze(-1))).sum({-1});
  return lgamma(sum_p) - lgamma(sum_q) - (lgamma(pc) - lgamma(qc)).sum({-1}) + cross;
}

Tensor kl(const Poisson& p, const Poisson& q) {
  return p.rate() * (p.rate().log() - q.rate().log()) - (p.rate() - q.rate());
}

Tensor kl(const Uniform& p, const Uniform& q) {
  Tensor r = ((q.high() - q.low()) / (p.high() - p.low())).log();
  return where(q.low().gt(p.low()).logical_or(q.high().lt(p.high())), full_like(r, kInf), r);
}

Tensor kl(const MultivariateNormal& p, const MultivariateNormal& q) {
  if (p.event_shape() != q.event_shape())
    fail(
        "[kl_divergence] KL-divergence between two Multivariate Normals with different event shapes cannot be "
        "computed: ",
        shape_str(p.event_shape()), " vs ", shape_str(q.event_shape()));
  Tensor lp = p.scale_tril(), lq = q.scale_tril();
  Tensor half_term1 = lq.diagonal(0, -2, -1).log().sum({-1}) - lp.diagonal(0, -2, -1).log().sum({-1});
  Dims batch = broadcast_shapes({lp.shape(), lq.shape()});
  Tensor term2 = linalg::solve_triangular(lq.expand(batch), lp.expand(batch), false).flatten(-2).square().sum({-1});
  Tensor term3 = batch_mahalanobis(lq, q.loc() - p.loc());
  return half_term1 + 0.5 * (term2 + term3 - static_cast<double>(p.event_shape()[0]));
}

Tensor kl(const LowRankMultivariateNormal& p, const LowRankMultivariateNormal& q) {
  if (p.event_shape() != q.event_shape())
    fail(
        "[kl_divergence] KL-divergence between two Low Rank Multivariate Normals with different event shapes cannot "
        "be computed: ",
        shape_str(p.event_shape()), " vs ", shape_str(q.event_shape()));
  const Tensor &pw = p.cov_factor(), &pd = p.cov_diag(), &qd = q.cov_diag();
  // tr(Sq^-1 Sp) by Woodbury, with A = Cq^-1 Wq^T Dq^-1
  const Tensor a = linalg::solve_triangular(q.capacitance_tril(), q.cov_factor().mT() / qd.unsqueeze(-2), false);
  const Tensor trace = (pd / qd).sum({-1}) + (pw * qd.rsqrt().unsqueeze(-1)).square().sum({-2, -1}) -
                       (a * pd.sqrt().unsqueeze(-2)).square().sum({-2, -1}) - a.matmul(pw).square().sum({-2, -1});
  return 0.5 * (q.log_det() - p.log_det() + trace + q.mahalanobis(q.loc() - p.loc()) -
                static_cast<double>(p.event_shape()[0]));
}

/** trace(X X^T) over the last two dims. */
Tensor trace_xxt(const Tensor& x) { return x.square().sum({-2, -1}); }

Tensor kl(const MultivariateNormal& p, const LowRankMultivariateNormal& q) {
  if (p.event_shape() != q.event_shape())
    fail(
        "[kl_divergence] KL-divergence between two (Low Rank) Multivariate Normals with different event shapes "
        "cannot be computed: ",
        shape_str(p.event_shape()), " vs ", shape_str(q.event_shape()));
  const Tensor lp = p.scale_tril(), &qd = q.cov_diag();
  const Tensor half_log_det_p = lp.diagonal(0, -2, -1).log().sum({-1});
  // tr(Sq^-1 Sp) by Woodbury, with A = Cq^-1 Wq^T Dq^-1
  const Tensor a = linalg::solve_triangular(q.capacitance_tril(), q.cov_factor().mT() / qd.unsqueeze(-2), false);
  const Tensor trace = trace_xxt(lp * qd.rsqrt().unsqueeze(-1)) - trace_xxt(a.matmul(lp));
  return 0.5 * (q.log_det() - 2 * half_log_det_p + trace + q.mahalanobis(q.loc() - p.loc()) -
                static_cast<double>(p.event_shape()[0]));
}

Tensor kl(const LowRankMultivariateNormal& p, const MultivariateNormal& q) {
  if (p.event_shape() != q.event_shape())
    fail(
        "[kl_divergence] KL-divergence between two (Low Rank) Multivariate Normals with different event shapes "
        "cannot be computed: ",
        shape_str(p.event_shape()), " vs ", shape_str(q.event_shape()));
  const Tensor lq = q.scale_tril();
  const int64_t n = p.event_shape()[0], r = p.cov_factor().size(-1);
  const Dims batch = broadcast_shapes({q.batch_shape(), p.batch_shape()});
  const Tensor lq_b = lq.expand(concat(batch, {n, n}));
  // tr(Sq^-1 Sp) = |Lq^-1 Wp|^2 + |Lq^-1 Dp^1/2|^2
  const Tensor trace =
      trace_xxt(linalg::solve_triangular(lq_b, p.cov_factor().expand(concat(batch, {n, r})), false)) +
      trace_xxt(linalg::solve_triangular(lq_b, diag_embed(p.cov_diag().sqrt()).expand(concat(batch, {n, n})), false));
  return 0.5 * (2 * lq.diagonal(0, -2, -1).log().sum({-1}) - p.log_det() + trace +
                batch_mahalanobis(lq, q.loc() - p.loc()) - static_cast<double>(n));
}

Tensor kl(const Independent& p, const Independent& q) {
  if (p.reinterpreted_batch_ndims() != q.reinterpreted_batch_ndims())
    throw NotImplementedError("[kl_divergence] Independent distributions with different reinterpreted_batch_ndims");
  return sum_rightmost(kl_divergence(*p.base_dist(), *q.base_dist()), p.reinterpreted_batch_ndims());
}

// ---- pairs of two families (torch's) -------------------------------------------------------

constexpr double kEuler = std::numbers::egamma;

Tensor kl(const Exponential& p, const Gumbel& q) {
  const Tensor scale_rate = p.rate() * q.scale(), loc_scale = q.loc() / q.scale();
  return scale_rate.log() - 1 - loc_scale + loc_scale.exp() * scale_rate / (scale_rate + 1) + scale_rate.reciprocal();
}

Tensor kl(const Gamma& p, const Gumbel& q) {
  const Tensor& c = p.concentration();
  const Tensor rate_scale = p.rate() * q.scale(), loc_scale = q.loc() / q.scale();
  const Tensor t1 = (c - 1) * digamma(c) - lgamma(c) - c;
  const Tensor t2 = rate_scale.log() + c / rate_scale;
  const Tensor t3 = loc_scale.exp() * (1 + rate_scale.reciprocal()).pow(-c) - loc_scale;
  return t1 + t2 + t3;
}

Tensor kl(const Gumbel& p, const Normal& q) {
  const Tensor ratio = p.scale() / q.scale();
  const Tensor t1 = (ratio / std::sqrt(2 * std::numbers::pi)).log();
  const Tensor t2 = (std::numbers::pi * 0.5 * ratio).square() / 3;
  const Tensor t3 = ((p.loc() + p.scale() * kEuler - q.loc()) / q.scale()).square() * 0.5;
  return -t1 + t2 + t3 - (kEuler + 1);
}

Tensor kl(const Normal& p, const Gumbel& q) {
  const Tensor mean_scale = p.loc() / q.scale(), var_ratio = (p.scale() / q.scale()).square();
  const Tensor loc_scale = q.loc() / q.scale();
  return -0.5 * var_ratio.log() + mean_scale - loc_scale + (-mean_scale + 0.5 * var_ratio + loc_scale).exp() -
         0.5 * (1 + std::log(2 * std::numbers::pi));
}

Tensor kl(const Uniform& p, const Gumbel& q) {
  const Tensor common = q.scale() / (p.high() - p.low());
  const Tensor high = (p.high() - q.loc()) / q.scale(), low = (p.low() - q.loc()) / q.scale();
  return common.log() + 0.5 * (high + low) - common * ((-high).exp() - (-low).exp());
}

Tensor kl(const Pareto& p, const Exponential& q) {
  const Tensor scale_rate = p.scale() * q.rate();
  const Tensor r =
      (p.alpha() / scale_rate).log() - p.alpha().reciprocal() + p.alpha() * scale_rate / (p.alpha() - 1) - 1;
  return where(p.alpha().le(1), kInf, r);  // p's mean is infinite
}

Tensor kl(const Pareto& p, const Gamma& q) {
  const Tensor common = p.scale().log() + p.alpha().reciprocal();
  const Tensor& c = q.concentration();
  const Tensor r = p.alpha().log() - common + lgamma(c) - c * q.rate().log() + (1 - c) * common +
                   q.rate() * p.alpha() * p.scale() / (p.alpha() - 1) - 1;
  return where(p.alpha().le(1), kInf, r);
}

Tensor kl(const Pareto& p, const Normal& q) {
  const Tensor common = p.scale() / (p.alpha() - 1);
  const Tensor t1 = (std::sqrt(2 * std::numbers::pi) * q.scale() * p.alpha() / p.scale()).log();
  const Tensor t3 = p.alpha() * common.square() / (p.alpha() - 2);
  const Tensor t4 = (p.alpha() * common - q.loc()).square();
  const Tensor r = t1 - p.alpha().reciprocal() + (t3 + t4) / (2 * q.scale().square()) - 1;
  return where(p.alpha().le(2), kInf, r);  // p's variance is infinite
}

Tensor kl(const Uniform& p, const Pareto& q) {
  const Tensor width = p.high() - p.low();
  const Tensor t1 = (q.alpha() * q.scale().pow(q.alpha()) * width).log();
  const Tensor t2 = (xlogy(p.high(), p.high()) - xlogy(p.low(), p.low()) - width) / width;
  return where(p.low().lt(q.scale()), kInf, t2 * (q.alpha() + 1) - t1);
}

// The rest of torch's cross-family pairs: -H(p) - E_p[log q] with q's log density's terms
// taken in expectation under p.

Tensor kl(const Binomial& p, const Binomial& q) {
  if (p.total_count().lt(q.total_count()).any().item<bool>())
    throw NotImplementedError(
        "[kl_divergence] KL between Binomials where q.total_count > p.total_count is not implemented");
  const Tensor r =
      p.total_count() * (p.probs() * (p.logits() - q.logits()) + (-p.probs()).log1p() - (-q.probs()).log1p());
  return where(p.total_count().gt(q.total_count()), kInf, r);  // p has mass above q's count
}

Tensor kl(const ContinuousBernoulli& p, const ContinuousBernoulli& q) {
  return p.mean() * (p.logits() - q.logits()) + p.log_norm() + (-p.probs()).log1p() - q.log_norm() -
         (-q.probs()).log1p();
}

Tensor kl(const Bernoulli& p, const Poisson& q) { return -p.entropy() - (p.probs() * q.rate().log() - q.rate()); }

// The same transforms of two bases: KL is invariant under a bijection (torch's).
Tensor kl(const TransformedDistribution& p, const TransformedDistribution& q) {
  const Transforms &a = p.transforms(), &b = q.transforms();
  const bool same = a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                                       [](const auto& x, const auto& y) { return x->equals(*y); });
  if (!same || p.event_shape() != q.event_shape())
    throw NotImplementedError("[kl_divergence] TransformedDistributions through different transforms");
  return kl_divergence(*p.base_dist(), *q.base_dist());
}

// torch reaches this pair by its ExponentialFamily fallback (a Bregman divergence by autograd).
Tensor kl(const Wishart& p, const Wishart& q) {
  if (p.event_shape() != q.event_shape()) fail("[kl_divergence] Wishart distributions with different event shapes");
  const int64_t n = p.event_shape().back();
  const auto k = static_cast<double>(n);
  const Tensor lp = p.scale_tril(), lq = q.scale_tril();
  const Tensor log_det_p = 2 * lp.diagonal(0, -2, -1).log().sum({-1});
  const Tensor log_det_q = 2 * lq.diagonal(0, -2, -1).log().sum({-1});
  const Tensor trace = linalg::solve_triangular(lq, lp, /*upper=*/false).square().sum({-2, -1});  // tr(Vq^-1 Vp)
  const Tensor &nu_p = p.df(), &nu_q = q.df();
  return nu_q / 2 * (log_det_q - log_det_p) + nu_p / 2 * (trace - k) + mvlgamma(nu_q / 2, n) - mvlgamma(nu_p / 2, n) +
         (nu_p - nu_q) / 2 * mvdigamma(nu_p / 2, n);
}

/** -E[log q] for q a ContinuousBernoulli and p of mean m on [0, 1]. */
Tensor cross_entropy_cb(const Tensor& m, const ContinuousBernoulli& q) {
  return -m * q.logits() - (-q.probs()).log1p() - q.log_norm();
}

/** -E[log q] for q a Normal and p of mean m and variance v. */
Tensor cross_entropy_normal(const Tensor& m, const Tensor& v, const Normal& q) {
  return 0.5 * (2 * std::numbers::pi * q.scale().square()).log() +
         (v + (m - q.loc()).square()) / (2 * q.scale().square());
}

/** -E[log q] for q a Gamma and p of mean m and E[log x] = mean_log. */
Tensor cross_entropy_gamma(const Tensor& m, const Tensor& mean_log, const Gamma& q) {
  const Tensor& c = q.concentration();
  return lgamma(c) - c * q.rate().log() - (c - 1) * mean_log + q.rate() * m;
}

Tensor kl(const Beta& p, const ContinuousBernoulli& q) { return -p.entropy() + cross_entropy_cb(p.mean(), q); }
Tensor kl(const Beta& p, const Exponential& q) { return -p.entropy() - q.rate().log() + q.rate() * p.mean(); }
Tensor kl(const Beta& p, const Gamma& q) {
  const Tensor mean_log = digamma(p.concentration1()) - digamma(p.concentration1() + p.concentration0());
  return -p.entropy() + cross_entropy_gamma(p.mean(), mean_log, q);
}
Tensor kl(const Beta& p, const Normal& q) { return -p.entropy() + cross_entropy_normal(p.mean(), p.variance(), q); }
Tensor kl(const Beta& p, const Uniform& q) {
  const Tensor r = -p.entropy() + (q.high() - q.low()).log();
  return where(q.low().gt(0).logical_or(q.high().lt(1)), kInf, r);
}

Tensor kl(const ContinuousBernoulli& p, const Exponential& q) {
  return -p.entropy() - q.rate().log() + q.rate() * p.mean();
}
Tensor kl(const ContinuousBernoulli& p, const Normal& q) {
  return -p.entropy() + cross_entropy_normal(p.mean(), p.variance(), q);
}
// Finite where q covers [0, 1]: torch's inf at q.low == 0 or q.high == 1 is wrong there.
Tensor kl(const ContinuousBernoulli& p, const Uniform& q) {
  const Tensor r = -p.entropy() + (q.high() - q.low()).log();
  return where(q.low().gt(0).logical_or(q.high().lt(1)), kInf, r);
}

Tensor kl(const Exponential& p, const Gamma& q) {
  const Tensor mean_log = -kEuler - p.rate().log();  // E[log x] under Exponential(rate)
  return -p.entropy() + cross_entropy_gamma(p.mean(), mean_log, q);
}
Tensor kl(const Exponential& p, const Normal& q) {
  return -p.entropy() + cross_entropy_normal(p.mean(), p.variance(), q);
}

Tensor kl(const Gamma& p, const Exponential& q) { return -p.entropy() - q.rate().log() + q.rate() * p.mean(); }
Tensor kl(const Gamma& p, const Normal& q) { return -p.entropy() + cross_entropy_normal(p.mean(), p.variance(), q); }

Tensor kl(const Laplace& p, const Normal& q) {
  return -p.entropy() + cross_entropy_normal(p.loc(), 2 * p.scale().square(), q);
}

Tensor kl(const Normal& p, const Laplace& q) {
  // E|x - q.loc| for x ~ Normal: the folded normal's mean
  const Tensor diff = p.loc() - q.loc();
  const Tensor mean_abs = std::sqrt(2 / std::numbers::pi) * p.scale() * (-0.5 * (diff / p.scale()).square()).exp() +
                          diff * (diff / p.scale() * std::sqrt(0.5)).erf();
  return -p.entropy() + (2 * q.scale()).log() + mean_abs / q.scale();
}

/** E[log x] under Uniform(low, high), width = high - low. */
Tensor uniform_mean_log(const Tensor& low, const Tensor& high) {
  return (xlogy(high, high) - xlogy(low, low)) / (high - low) - 1;
}

Tensor kl(const Uniform& p, const Beta& q) {
  const Tensor& a = q.concentration1();
  const Tensor& b = q.concentration0();
  const Tensor r = -p.entropy() - (a - 1) * uniform_mean_log(p.low(), p.high()) -
                   (b - 1) * uniform_mean_log(1 - p.high(), 1 - p.low()) + lgamma(a) + lgamma(b) - lgamma(a + b);
  return where(p.high().gt(1).logical_or(p.low().lt(0)), kInf, r);
}
// Finite where p lies inside [0, 1]: torch's inf at p.low == 0 or p.high == 1 is wrong there.
Tensor kl(const Uniform& p, const ContinuousBernoulli& q) {
  const Tensor r = -p.entropy() + cross_entropy_cb(p.mean(), q);
  return where(p.high().gt(1).logical_or(p.low().lt(0)), kInf, r);
}
Tensor kl(const Uniform& p, const Exponential& q) {
  const Tensor r = -p.entropy() - q.rate().log() + q.rate() * p.mean();
  return where(p.low().lt(0), kInf, r);
}
Tensor kl(const Uniform& p, const Gamma& q) {
  const Tensor r = -p.entropy() + cross_entropy_gamma(p.mean(), uniform_mean_log(p.low(), p.high()), q);
  return where(p.low().lt(0), kInf, r);
}
Tensor kl(const Uniform& p, const Normal& q) { return -p.entropy() + cross_entropy_normal(p.mean(), p.variance(), q); }

/** kl(p, q) when p is a P and q a Q (by default of one family). */
template <class P, class Q = P> bool try_kl(const Distribution& p, const Distribution& q, Tensor& out) {
  auto* a = dynamic_cast<const P*>(&p);
  auto* b = dynamic_cast<const Q*>(&q);
  if (!a || !b) return false;
  out = kl(*a, *b);
  return true;
}

/** inf when p is a P and q a Q: p puts mass where q has none (torch's _infinite_like). */
template <class P, class Q> bool try_infinite(const Distribution& p, const Distribution& q, Tensor& out) {
  if (!dynamic_cast<const P*>(&p) || !dynamic_cast<const Q*>(&q)) return false;
  const Tensor m = p.mean();
  out = full(p.batch_shape(), kInf, {m.dtype(), m.device()});
  return true;
}

/** A pair of classes with its KL: the names let Python's register_kl rank it against the
 *  pairs users register (torch's most specific match). */
struct Rule {
  const char* p;
  const char* q;
  bool (*apply)(const Distribution&, const Distribution&, Tensor&);
};

// The first that applies wins: no two rules here match one pair of distributions.
const Rule kRules[] = {
    {"Normal", "Normal", try_kl<Normal>},
    {"Bernoulli", "Bernoulli", try_kl<Bernoulli>},
    {"Categorical", "Categorical", try_kl<Categorical>},
    {"OneHotCategorical", "OneHotCategorical", try_kl<OneHotCategorical>},
    {"Uniform", "Uniform", try_kl<Uniform>},
    {"Exponential", "Exponential", try_kl<Exponential>},
    {"Laplace", "Laplace", try_kl<Laplace>},
    {"Gamma", "Gamma", try_kl<Gamma>},
    {"Beta", "Beta", try_kl<Beta>},
    {"Dirichlet", "Dirichlet", try_kl<Dirichlet>},
    {"Poisson", "Poisson", try_kl<Poisson>},
    {"MultivariateNormal", "MultivariateNormal", try_kl<MultivariateNormal>},
    {"Independent", "Independent", try_kl<Independent>},
    {"Cauchy", "Cauchy", try_kl<Cauchy>},
    {"HalfNormal", "HalfNormal", try_kl<HalfNormal>},
    {"Gumbel", "Gumbel", try_kl<Gumbel>},
    {"Pareto", "Pareto", try_kl<Pareto>},
    {"Geometric", "Geometric", try_kl<Geometric>},
    {"LowRankMultivariateNormal", "LowRankMultivariateNormal", try_kl<LowRankMultivariateNormal>},
    {"Binomial", "Binomial", try_kl<Binomial>},
    {"ContinuousBernoulli", "ContinuousBernoulli", try_kl<ContinuousBernoulli>},
    {"TransformedDistribution", "TransformedDistribution", try_kl<TransformedDistribution>},
    {"Wishart", "Wishart", try_kl<Wishart>},
    {"Exponential", "Gumbel", try_kl<Exponential, Gumbel>},
    {"Gamma", "Gumbel", try_kl<Gamma, Gumbel>},
    {"Gumbel", "Normal", try_kl<Gumbel, Normal>},
    {"Normal", "Gumbel", try_kl<Normal, Gumbel>},
    {"Uniform", "Gumbel", try_kl<Uniform, Gumbel>},
    {"Pareto", "Exponential", try_kl<Pareto, Exponential>},
    {"Pareto", "Gamma", try_kl<Pareto, Gamma>},
    {"Pareto", "Normal", try_kl<Pareto, Normal>},
    {"Uniform", "Pareto", try_kl<Uniform, Pareto>},
    {"MultivariateNormal", "LowRankMultivariateNormal", try_kl<MultivariateNormal, LowRankMultivariateNormal>},
    {"LowRankMultivariateNormal", "MultivariateNormal", try_kl<LowRankMultivariateNormal, MultivariateNormal>},
    {"Bernoulli", "Poisson", try_kl<Bernoulli, Poisson>},
    {"Beta", "ContinuousBernoulli", try_kl<Beta, ContinuousBernoulli>},
    {"Beta", "Exponential", try_kl<Beta, Exponential>},
    {"Beta", "Gamma", try_kl<Beta, Gamma>},
    {"Beta", "Normal", try_kl<Beta, Normal>},
    {"Beta", "Uniform", try_kl<Beta, Uniform>},
    {"ContinuousBernoulli", "Exponential", try_kl<ContinuousBernoulli, Exponential>},
    {"ContinuousBernoulli", "Normal", try_kl<ContinuousBernoulli, Normal>},
    {"ContinuousBernoulli", "Uniform", try_kl<ContinuousBernoulli, Uniform>},
    {"Exponential", "Gamma", try_kl<Exponential, Gamma>},
    {"Exponential", "Normal", try_kl<Exponential, Normal>},
    {"Gamma", "Exponential", try_kl<Gamma, Exponential>},
    {"Gamma", "Normal", try_kl<Gamma, Normal>},
    {"Laplace", "Normal", try_kl<Laplace, Normal>},
    {"Normal", "Laplace", try_kl<Normal, Laplace>},
    {"Uniform", "Beta", try_kl<Uniform, Beta>},
    {"Uniform", "ContinuousBernoulli", try_kl<Uniform, ContinuousBernoulli>},
    {"Uniform", "Exponential", try_kl<Uniform, Exponential>},
    {"Uniform", "Gamma", try_kl<Uniform, Gamma>},
    {"Uniform", "Normal", try_kl<Uniform, Normal>},
    // p has mass where q has none
    {"Beta", "Pareto", try_infinite<Beta, Pareto>},
    {"Exponential", "Pareto", try_infinite<Exponential, Pareto>},
    {"Gamma", "Pareto", try_infinite<Gamma, Pareto>},
    {"Laplace", "Pareto", try_infinite<Laplace, Pareto>},
    {"Normal", "Pareto", try_infinite<Normal, Pareto>},
    {"Gumbel", "Pareto", try_infinite<Gumbel, Pareto>},
    {"Gumbel", "Beta", try_infinite<Gumbel, Beta>},
    {"Gumbel", "Exponential", try_infinite<Gumbel, Exponential>},
    {"Gumbel", "Gamma", try_infinite<Gumbel, Gamma>},
    {"Gumbel", "Uniform", try_infinite<Gumbel, Uniform>},
    {"Pareto", "Beta", try_infinite<Pareto, Beta>},
    {"Pareto", "Uniform", try_infinite<Pareto, Uniform>},
    {"ContinuousBernoulli", "Pareto", try_infinite<ContinuousBernoulli, Pareto>},
    {"Pareto", "ContinuousBernoulli", try_infinite<Pareto, ContinuousBernoulli>},
    {"Gumbel", "ContinuousBernoulli", try_infinite<Gumbel, ContinuousBernoulli>},
    {"Poisson", "Binomial", try_infinite<Poisson, Binomial>},
    {"Poisson", "Bernoulli", try_infinite<Poisson, Bernoulli>},
    {"Exponential", "Uniform", try_infinite<Exponential, Uniform>},
    {"Exponential", "ContinuousBernoulli", try_infinite<Exponential, ContinuousBernoulli>},
    {"Exponential", "Beta", try_infinite<Exponential, Beta>},
    {"Gamma", "Uniform", try_infinite<Gamma, Uniform>},
    {"Gamma", "ContinuousBernoulli", try_infinite<Gamma, ContinuousBernoulli>},
    {"Gamma", "Beta", try_infinite<Gamma, Beta>},
    {"Laplace", "Uniform", try_infinite<Laplace, Uniform>},
    {"Laplace", "Gamma", try_infinite<Laplace, Gamma>},
    {"Laplace", "Exponential", try_infinite<Laplace, Exponential>},
    {"Laplace", "ContinuousBernoulli", try_infinite<Laplace, ContinuousBernoulli>},
    {"Laplace", "Beta", try_infinite<Laplace, Beta>},
    {"Normal", "Uniform", try_infinite<Normal, Uniform>},
    {"Normal", "Gamma", try_infinite<Normal, Gamma>},
    {"Normal", "Exponential", try_infinite<Normal, Exponential>},
    {"Normal", "ContinuousBernoulli", try_infinite<Normal, ContinuousBernoulli>},
    {"Normal", "Beta", try_infinite<Normal, Beta>},
};
}  // namespace

Tensor kl_divergence(const Distribution& p, const Distribution& q) {
  Tensor out;
  for (const Rule& r : kRules)
    if (r.apply(p, q, out)) return out;
  throw NotImplementedError(
      detail::cat("[kl_divergence] no KL(p || q) is implemented for p a ", p.name(), " and q a ", q.name()));
}

std::vector<std::pair<std::string, std::string>> kl_pairs() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Rule& r : kRules) out.emplace_back(r.p, r.q);
  return out;
}

}  // namespace ug::distributions
