#include "ug/distributions/kl.h"

#include <limits>
#include <numbers>

#include "ug/core/error.h"
#include "ug/distributions/continuous.h"
#include "ug/distributions/discrete.h"
#include "ug/distributions/gamma.h"
#include "ug/distributions/multivariate.h"
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
}  // namespace

Tensor kl_divergence(const Distribution& p, const Distribution& q) {
  Tensor out;
  if (try_kl<Normal>(p, q, out) || try_kl<Bernoulli>(p, q, out) || try_kl<Categorical>(p, q, out) ||
      try_kl<OneHotCategorical>(p, q, out) || try_kl<Uniform>(p, q, out) || try_kl<Exponential>(p, q, out) ||
      try_kl<Laplace>(p, q, out) || try_kl<Gamma>(p, q, out) || try_kl<Beta>(p, q, out) ||
      try_kl<Dirichlet>(p, q, out) || try_kl<Poisson>(p, q, out) || try_kl<MultivariateNormal>(p, q, out) ||
      try_kl<Independent>(p, q, out) || try_kl<Cauchy>(p, q, out) || try_kl<HalfNormal>(p, q, out) ||
      try_kl<Gumbel>(p, q, out) || try_kl<Pareto>(p, q, out) || try_kl<Geometric>(p, q, out) ||
      try_kl<LowRankMultivariateNormal>(p, q, out))
    return out;
  if (try_kl<Exponential, Gumbel>(p, q, out) || try_kl<Gamma, Gumbel>(p, q, out) || try_kl<Gumbel, Normal>(p, q, out) ||
      try_kl<Normal, Gumbel>(p, q, out) || try_kl<Uniform, Gumbel>(p, q, out) ||
      try_kl<Pareto, Exponential>(p, q, out) || try_kl<Pareto, Gamma>(p, q, out) || try_kl<Pareto, Normal>(p, q, out) ||
      try_kl<Uniform, Pareto>(p, q, out) || try_kl<MultivariateNormal, LowRankMultivariateNormal>(p, q, out) ||
      try_kl<LowRankMultivariateNormal, MultivariateNormal>(p, q, out))
    return out;
  if (try_infinite<Beta, Pareto>(p, q, out) || try_infinite<Exponential, Pareto>(p, q, out) ||
      try_infinite<Gamma, Pareto>(p, q, out) || try_infinite<Laplace, Pareto>(p, q, out) ||
      try_infinite<Normal, Pareto>(p, q, out) || try_infinite<Gumbel, Pareto>(p, q, out) ||
      try_infinite<Gumbel, Beta>(p, q, out) || try_infinite<Gumbel, Exponential>(p, q, out) ||
      try_infinite<Gumbel, Gamma>(p, q, out) || try_infinite<Gumbel, Uniform>(p, q, out) ||
      try_infinite<Pareto, Beta>(p, q, out) || try_infinite<Pareto, Uniform>(p, q, out))
    return out;
  throw NotImplementedError(
      detail::cat("[kl_divergence] no KL(p || q) is implemented for p a ", p.name(), " and q a ", q.name()));
}

}  // namespace ug::distributions
