#include "ug/autograd/special.h"

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <vector>

#include "ug/autograd/custom_function.h"
#include "ug/graph/capture.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/record.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/unary.h"

namespace ug {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kSqrt2 = std::numbers::sqrt2;
constexpr double kSqrtPi = 1.77245385090551602730;
constexpr double kSqrt2Pi = 2.50662827463100050242;

using Value = std::function<Tensor(const Tensors& float64_inputs)>;
/** The derivative of the result in input i, written with differentiable ops. */
using Partial = std::function<Tensor(size_t i, const Tensors& inputs)>;

/** value (on the inputs broadcast together and in float64, without history) in the inputs'
 *  floating dtype, differentiating as `partial` says in each input whose entry in `lacking` is
 *  null; the others name the argument whose derivative torch lacks too: asking for it raises
 *  when the gradient (or tangent) is computed, as torch's does. */
Tensor with_partials(const char* name, Tensors inputs, Value value, Partial partial,
                     std::vector<const char*> lacking = {}) {
  lacking.resize(inputs.size(), nullptr);
  DType dtype = inputs[0].dtype();
  for (const Tensor& t : inputs) dtype = promote_types(dtype, t.dtype());
  dtype = to_floating(dtype);
  if (inputs.size() > 1) inputs = broadcast_tensors(inputs);
  auto missing = [name, lacking](size_t i) {
    fail<RuntimeError>("[", name, "] the derivative for '", lacking[i], "' is not implemented (nor is torch's)");
  };
  auto call = [=](const Tensors& in) {
    Tensor y;
    {
      NoGradGuard no_grad;
      Tensors d;
      for (const Tensor& t : in) d.push_back(t.detach().to(DType::Float64));
      y = value(d).to(dtype);
    }
    std::vector<bool> wanted;
    for (const Tensor& t : in) wanted.push_back(autograd::needs_grad({&t}));
    CustomVjp vjp = [=](const Tensors& saved, const Tensors& g) {
      Tensors out(saved.size());
      for (size_t i = 0; i < saved.size(); ++i) {
        if (!wanted[i]) continue;
        if (lacking[i]) missing(i);
        out[i] = (g[0] * partial(i, saved).to(g[0].dtype())).to(saved[i].dtype());
      }
      return out;
    };
    CustomJvp jvp = [=](const Tensors& tangents) {
      Tensor sum;
      for (size_t i = 0; i < tangents.size(); ++i) {
        if (!tangents[i].defined()) continue;
        if (lacking[i]) missing(i);
        const Tensor term = tangents[i] * partial(i, in).to(tangents[i].dtype());
        sum = sum.defined() ? sum + term : term;
      }
      return Tensors{sum};
    };
    return custom_function(name, in, {y}, vjp, jvp, in)[0];
  };
  return custom_call(
      name, inputs, [&] { return Tensors{call(inputs)}; }, [call](const Tensors& in) { return Tensors{call(in)}; })[0];
}

/** P(a, x) and Q(a, x) where a and x are positive and finite (elsewhere: values to replace):
 *  sum_k x^k / (a (a + 1) ... (a + k)) below x = a + 1, where its terms shrink from the start;
 *  above, the continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)),
 *  from the bottom; both times x^a e^-x / Gamma(a). The complement of either loses nothing: it
 *  is at least 1/2 there. */
std::pair<Tensor, Tensor> incomplete_gamma(const Tensor& a, const Tensor& x) {
  constexpr int kTerms = 200;
  const Tensor ok = (a > 0.0).logical_and(x > 0.0).logical_and(isfinite(a)).logical_and(isfinite(x));
  const Tensor sa = where(ok, a, 1.0), sx = where(ok, x, 1.0);
  const Tensor by_series = sx < sa + 1.0;
  const Tensor front = (sa * sx.log() - sx - lgamma(sa)).exp();
  const Tensor xs = where(by_series, sx, 0.0), xf = where(by_series, sa + 1.0, sx);
  Tensor term = 1.0 / sa, series = term;
  for (int k = 1; k <= kTerms; ++k) {
    term = term * xs / (sa + static_cast<double>(k));
    series = series + term;
  }
  Tensor t = xf + (2.0 * kTerms + 1.0) - sa;
  for (int i = kTerms; i >= 1; --i) t = (xf + (2.0 * i - 1.0) - sa) - static_cast<double>(i) * (i - sa) / t;
  const Tensor lower = front * series, upper = front / t;
  return {where(by_series, lower, 1.0 - upper), where(by_series, 1.0 - lower, upper)};
}

/** igamma (upper: igammac) on float64 a and x, with torch's values at the edges. */
Tensor incomplete_gamma_value(const Tensor& a, const Tensor& x, bool upper) {
  auto [p, q] = incomplete_gamma(a, x);
  Tensor r = upper ? q : p;
  const double one = upper ? 0.0 : 1.0, zero = 1.0 - one;
  r = where(x == 0.0, zero, where(isinf(x), one, r));
  r = where(a == 0.0, one, where(isinf(a), zero, r));
  const Tensor bad = (a < 0.0).logical_or(x < 0.0).logical_or((a == 0.0).logical_and(x == 0.0));
  return where(bad.logical_or(isinf(a).logical_and(isinf(x))).logical_or(isnan(a)).logical_or(isnan(x)), kNaN, r);
}

/** d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a) (1 at x = 0 when a = 1). */
Tensor igamma_slope(const Tensor& a, const Tensor& x) {
  const Tensor slope = ((a - 1.0) * x.log() - x - lgamma(a)).exp();
  return where((x == 0.0).logical_and(a == 1.0), 1.0, slope);
}

/** Hurwitz's zeta on float64 x and q (Cephes's zeta: Euler-Maclaurin summation). */
Tensor zeta_value(const Tensor& x, const Tensor& q) {
  static constexpr double kBernoulli[] = {12.0,
                                          -720.0,
                                          30240.0,
                                          -1209600.0,
                                          47900160.0,
                                          -1.8924375803183791606e9,
                                          7.47242496e10,
                                          -2.950130727918164224e12,
                                          1.1646782814350067249e14,
                                          -4.5979787224074726105e15,
                                          1.8152105401943546773e17,
                                          -7.1661652561756670113e18};  // (2k)! / B_2k
  constexpr int kSummed = 16;
  const Tensor q_pole = (q <= 0.0).logical_and(q == q.floor());
  const Tensor nan = (x < 1.0).logical_or((q < 0.0).logical_and(x != x.floor())).logical_and(q_pole.logical_not());
  const Tensor inf = (x == 1.0).logical_or(q_pole);
  const Tensor ok = isfinite(x).logical_and(isfinite(q)).logical_and(nan.logical_or(inf).logical_not());
  const Tensor sx = where(ok, x, 2.0), sq = where(ok, q, 1.0);
  Tensor s = zeros_like(sx);
  for (int k = 0; k <= kSummed; ++k) s = s + (sq + static_cast<double>(k)).pow(-sx);
  const Tensor w = sq + static_cast<double>(kSummed);
  Tensor b = w.pow(-sx);
  s = s + b * w / (sx - 1.0) - 0.5 * b;
  Tensor rising = ones_like(sx);
  for (int i = 0; i < 12; ++i) {
    rising = rising * (sx + 2.0 * i);
    b = b / w;
    s = s + rising * b / kBernoulli[i];
    rising = rising * (sx + 2.0 * i + 1.0);
    b = b / w;
  }
  // torch's values: x = inf gives 1 at q = 1, inf below and NaN above; q = inf gives NaN.
  const Tensor x_inf = where(q == 1.0, 1.0, where(q < 1.0, full_like(q, kInf), kNaN));
  s = where(isinf(x).logical_and(x > 0.0), x_inf, where(isinf(q).logical_and(q > 0.0), kNaN, s));
  return where(inf, kInf, where(nan.logical_or(isnan(x)).logical_or(isnan(q)), kNaN, s));
}

/** exp(-|x|) i_order(x) (scaled) or i_order(x), order 0 or 1, for float64 x: the power series
 *  up to |x| = 20 (40 terms: at 20 the last is 1e-20 of the sum), the asymptotic series past it
 *  (30 terms, which shrink until k ~ 2|x|, reach 1e-17 at 20). */
Tensor bessel_i(const Tensor& d, int order, bool scaled) {
  const Tensor a = d.abs(), near = a <= 20.0;
  const Tensor an = where(near, a, 0.0), q = an.square() / 4.0;
  Tensor term = ones_like(q), series = ones_like(q);
  for (int k = 1; k <= 40; ++k) {
    term = term * q / static_cast<double>(k * (k + order));
    series = series + term;
  }
  if (order == 1) series = series * an / 2.0;
  if (scaled) series = series * (-an).exp();
  const Tensor af = where(near, 20.0, a);
  Tensor step = ones_like(af), tail = ones_like(af);
  for (int k = 1; k <= 30; ++k) {
    step = step * static_cast<double>((2 * k - 1) * (2 * k - 1) - 4 * order * order) / (af * (8.0 * k));
    tail = tail + step;
  }
  const Tensor growth = scaled ? -0.5 * (af * (2 * kPi)).log() : af - 0.5 * (af * (2 * kPi)).log();
  const Tensor r = where(near, series, growth.exp() * tail);
  return order == 1 ? where(d < 0.0, -r, r) : r;
}

/** exp(sign x^2) for float64 x, as exp(sign h^2) exp(sign (x - h)(x + h)) with h = x to 12
 *  bits: h^2 is exact, so the rounding of x^2 (relative x^2 eps) stays out. */
Tensor exp_square(const Tensor& x, double sign) {
  const Tensor h = (x * 4096.0).floor() / 4096.0;
  return (sign * (h * h)).exp() * (sign * ((x - h) * (x + h))).exp();
}

/** exp(x^2) erfc(x) for float64 x: the continued fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 /
 *  (x + (3/2) / ...)))) from 1.5 on (80 levels, relative error ~1e-15 at 1.5), below that
 *  erfc exp(x^2) (1 - erf loses at most log10(1 / erfc(1.5)) = 1.5 digits there). */
Tensor erfcx_value(const Tensor& d) {
  const Tensor far = d >= 1.5;
  const Tensor xf = where(far, d, 1.5);
  Tensor t = xf;
  for (int k = 80; k >= 1; --k) t = xf + (k / 2.0) / t;
  const Tensor xn = where(far.logical_or(isinf(d)), 0.0, d);
  const Tensor r = where(far, 1.0 / (t * kSqrtPi), erfc(xn) * exp_square(xn, 1.0));
  return where(d == -kInf, kInf, r);
}

/** erfc for float64 x, to float64's accuracy past 1.5 too (ug::erfc loses up to 3.4 digits
 *  below 2.5). */
Tensor erfc_value(const Tensor& d) {
  const Tensor far = d >= 1.5, xf = where(far, d, 1.5);
  return where(far, where(isinf(d), 0.0, exp_square(xf, -1.0) * erfcx_value(xf)), erfc(where(far, 0.0, d)));
}

Tensor log_ndtr_value(const Tensor& d) {
  // Left of -1 the logarithm of the scaled form, whose exp(-x^2 / 2) is taken out exactly;
  // right of it log1p of the small upper tail.
  const Tensor left = d < -1.0;
  const Tensor xl = where(left, d, -1.0), xr = where(left, 0.0, d);
  const Tensor far = -0.5 * xl.square() + (0.5 * erfcx_value(-xl / kSqrt2)).log();
  return where(left, far, (-0.5 * erfc_value(xr / kSqrt2)).log1p());
}

Tensor ndtri_value(const Tensor& p) {
  // Middle: sqrt(2) erfinv(2p - 1), 2p - 1 exact. Tails (q = min(p, 1 - p) < e^-2, exact):
  // Abramowitz and Stegun 26.2.23 (error < 4.5e-4), then Newton on log ndtr(y) = log q,
  // concave, so from there the error squares each step (5 steps: below float64's).
  const Tensor middle = (p - 0.5).abs() < 0.5 - std::exp(-2.0);
  const Tensor centre = kSqrt2 * erfinv(where(middle, 2.0 * (p - 0.5), 0.0));
  const Tensor q = where(p < 0.5, p, 1.0 - p);
  const Tensor qs = where(middle.logical_or((q > 0.0).logical_not()), 0.1, q), lq = qs.log();
  const Tensor t = (-2.0 * lq).sqrt();
  Tensor y = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int step = 0; step < 5; ++step) {
    const Tensor lp = log_ndtr_value(y);
    y = y - (lp - lq) * (lp + 0.5 * y.square()).exp() * kSqrt2Pi;
  }
  Tensor r = where(middle, centre, where(p < 0.5, y, -y));
  r = where(p == 0.0, -kInf, where(p == 1.0, kInf, r));
  return where((p < 0.0).logical_or(p > 1.0).logical_or(isnan(p)), kNaN, r);
}

constexpr double kEulerGamma = 0.57721566490153286061;

/** value(x in float64, detached) in x's floating dtype: torch differentiates none of these. */
Tensor without_derivative(const Tensor& x, const std::function<Tensor(const Tensor&)>& value) {
  return value(x.detach().to(DType::Float64)).to(to_floating(x.dtype()));
}

/** {J0, J1, Y0, Y1} at float64 x > 0 (elsewhere: values to replace). Up to 2 the power series
 *  (A&S 9.1.10-11), then Miller's backward recurrence from J_101 = 0, J_100 = 1 (ratios stay
 *  below 1e160 from x = 2 on), normalized by J0 + 2 sum J_2k = 1, with Y0 and Y1 from Neumann's
 *  sums of the same J_n (A&S 9.1.88 and its derivative); from 25 on Hankel's asymptotic series
 *  (40 terms; at 25 the error is e^-50), with cos(x - pi/4) as (cos x + sin x) / sqrt(2) so
 *  that a large x loses nothing to the shift. */
std::array<Tensor, 4> bessel_jy(const Tensor& x) {
  const Tensor small = x <= 2.0, large = x >= 25.0;
  // power series: sum (-q)^k / (k!)^2 (H_k-weighted for Y0), (x/2) sum (-q)^k / (k! (k+1)!)
  const Tensor xs = where(small.logical_and(x > 0.0), x, 1.0), q = xs.square() / 4.0, log_half = (xs / 2.0).log();
  Tensor t0 = ones_like(q), j0 = t0, s0 = zeros_like(q), t1 = ones_like(q), j1 = t1;
  double harmonic = 0.0, psi1 = -kEulerGamma, psi2 = 1.0 - kEulerGamma;
  Tensor s1 = full_like(q, psi1 + psi2);
  for (int k = 1; k <= 30; ++k) {
    t0 = -t0 * q / static_cast<double>(k * k);
    t1 = -t1 * q / static_cast<double>(k * (k + 1));
    harmonic += 1.0 / k;
    psi1 += 1.0 / k;
    psi2 += 1.0 / (k + 1);
    j0 = j0 + t0;
    s0 = s0 + t0 * harmonic;
    j1 = j1 + t1;
    s1 = s1 + t1 * (psi1 + psi2);
  }
  j1 = j1 * xs / 2.0;
  const Tensor y0_series = (2.0 / kPi) * ((log_half + kEulerGamma) * j0 - s0);
  const Tensor y1_series = -2.0 / (kPi * xs) + (2.0 / kPi) * log_half * j1 - xs / (2.0 * kPi) * s1;
  // Miller: J_n down from n = 100; the sums take each J_n as it comes.
  const Tensor xm = where(small.logical_or(large), 10.0, x);
  Tensor above = zeros_like(xm), jn = ones_like(xm), norm = zeros_like(xm), n0 = zeros_like(xm), n1 = zeros_like(xm);
  Tensor m1;
  for (int n = 100; n >= 1; --n) {
    if (n % 2 == 0) {
      const int k = n / 2;
      norm = norm + 2.0 * jn;
      n0 = n0 + ((k % 2) ? -1.0 : 1.0) / k * jn;
    } else {
      // J_2m+1's weight in sum_k (-1)^k (J_2k-1 - J_2k+1) / k: from k = m + 1 and k = m
      const int m = (n - 1) / 2;
      const double weight = ((m % 2) ? 1.0 : -1.0) * (1.0 / (m + 1) + (m >= 1 ? 1.0 / m : 0.0));
      n1 = n1 + weight * jn;
    }
    if (n == 1) m1 = jn;
    const Tensor below = (2.0 * n) * jn / xm - above;
    above = jn;
    jn = below;
  }
  norm = norm + jn;
  const Tensor mj0 = jn / norm, mj1 = m1 / norm, log_m = (xm / 2.0).log() + kEulerGamma;
  const Tensor y0_miller = (2.0 / kPi) * log_m * mj0 - (4.0 / kPi) * n0 / norm;
  const Tensor y1_miller = (2.0 / kPi) * (log_m * mj1 - mj0 / xm) + (2.0 / kPi) * n1 / norm;
  // Hankel: P and Q of orders 0 and 1
  const Tensor xl = where(large.logical_and(isfinite(x)), x, 25.0);
  std::array<Tensor, 2> p, qq;
  for (int nu = 0; nu <= 1; ++nu) {
    Tensor term = ones_like(xl), pn = ones_like(xl), qn = zeros_like(xl);
    for (int k = 1; k <= 40; ++k) {
      term = term * static_cast<double>(4 * nu * nu - (2 * k - 1) * (2 * k - 1)) / (xl * (8.0 * k));
      const double sign = ((k / 2) % 2) ? -1.0 : 1.0;  // (-1)^floor(k / 2)
      if (k % 2) qn = qn + sign * term;
      else pn = pn + sign * term;
    }
    p[nu] = pn;
    qq[nu] = qn;
  }
  const Tensor c = xl.cos(), s = xl.sin(), amp = (1.0 / (kPi * xl)).sqrt();
  const Tensor j0_far = amp * (p[0] * (c + s) - qq[0] * (s - c)), y0_far = amp * (p[0] * (s - c) + qq[0] * (c + s));
  const Tensor j1_far = amp * (p[1] * (s - c) + qq[1] * (s + c)), y1_far = amp * (-p[1] * (s + c) + qq[1] * (s - c));
  // torch's J and Y are NaN at +-inf (the limit is 0)
  auto pick = [&](const Tensor& a, const Tensor& b, const Tensor& f) {
    return where(small, a, where(large, where(isinf(x), kNaN, f), b));
  };
  return {pick(j0, mj0, j0_far), pick(j1, mj1, j1_far), pick(y0_series, y0_miller, y0_far),
          pick(y1_series, y1_miller, y1_far)};
}

/** J0 or J1 (order) at any float64 x: even and odd in x. */
Tensor bessel_j(const Tensor& d, int order) {
  const Tensor a = d.abs(), r = bessel_jy(a)[order];
  const Tensor at_zero = where(a == 0.0, order == 0 ? 1.0 : 0.0, r);
  return where(isnan(d), d, order == 1 ? where(d < 0.0, -at_zero, at_zero) : at_zero);
}

/** Y0 or Y1: -inf at 0, NaN below. */
Tensor bessel_y(const Tensor& d, int order) {
  const Tensor r = bessel_jy(d)[2 + order];
  return where(d == 0.0, -kInf, where((d < 0.0).logical_or(isnan(d)), kNaN, r));
}

/** e^x K_nu(x) for finite float64 x >= 1.5: to 20 the trapezoidal rule with step 0.1 on
 *  int_0^6 e^-x(cosh t - 1) cosh(nu t) dt (the integrand is entire: the error falls like
 *  exp(-2 pi^2 / (0.01 x)), e^-98 at 20; past t = 6 it is below e^-300), past 20 the asymptotic
 *  series (30 terms, error e^-40 at 20). */
Tensor scaled_k_beyond(const Tensor& x, double nu) {
  const Tensor large = x > 20.0;
  const Tensor xm = where(large, 5.0, x);
  Tensor integral = full_like(xm, 0.5);
  for (int j = 1; j <= 60; ++j) {
    const double t = 0.1 * j;
    integral = integral + (-(std::cosh(t) - 1.0) * xm).exp() * std::cosh(nu * t);
  }
  const Tensor xl = where(large, x, 25.0);
  Tensor step = ones_like(xl), tail = ones_like(xl);
  for (int k = 1; k <= 30; ++k) {
    step = step * (4 * nu * nu - (2 * k - 1) * (2 * k - 1)) / (xl * (8.0 * k));
    tail = tail + step;
  }
  return where(large, (kPi / (2.0 * xl)).sqrt() * tail, 0.1 * integral);
}

/** e^x K_order(x) (order 0 or 1) at float64 x: up to 2 the power series (A&S 9.6.13 and
 *  9.6.11) times e^x, beyond scaled_k_beyond. inf at 0, NaN below. */
Tensor scaled_bessel_k(const Tensor& d, int order) {
  const Tensor small = d <= 2.0;
  const Tensor xs = where(small.logical_and(d > 0.0), d, 1.0), q = xs.square() / 4.0, log_half = (xs / 2.0).log();
  Tensor term = ones_like(q), i_series = term, sum = order == 0 ? zeros_like(q) : full_like(q, 1.0 - 2 * kEulerGamma);
  double psi1 = -kEulerGamma, psi2 = 1.0 - kEulerGamma;  // psi(k + 1), psi(k + 2); order 0: H_k = psi1 + gamma
  for (int k = 1; k <= 30; ++k) {
    term = term * q / static_cast<double>(k * (k + order));
    psi1 += 1.0 / k;
    psi2 += 1.0 / (k + 1);
    i_series = i_series + term;
    sum = sum + term * (order == 0 ? psi1 + kEulerGamma : psi1 + psi2);
  }
  const Tensor k_series = order == 0 ? -(log_half + kEulerGamma) * i_series + sum
                                     : 1.0 / xs + log_half * i_series * xs / 2.0 - xs / 4.0 * sum;
  const Tensor beyond = where(isinf(d), 0.0, scaled_k_beyond(where(small.logical_or(isinf(d)), 5.0, d), order));
  const Tensor r = where(small, k_series * xs.exp(), beyond);
  return where(d == 0.0, kInf, where((d < 0.0).logical_or(isnan(d)), kNaN, r));
}

/** J_nu(x) for float64 x >= 1.5 and a fractional nu > -1: Miller's backward recurrence from
 *  order nu + 120 (ratios below 1e250 from 1.5 on), normalized by Gegenbauer's sum
 *  sum_k (nu + 2k) Gamma(nu + k) / k! J_nu+2k(x) = (x/2)^nu. */
Tensor bessel_j_fractional(const Tensor& x, double nu) {
  Tensor above = zeros_like(x), jn = ones_like(x), norm = zeros_like(x);
  for (int n = 120; n >= 1; --n) {
    if (n % 2 == 0) norm = norm + (nu + n) * std::exp(std::lgamma(nu + n / 2) - std::lgamma(n / 2 + 1.0)) * jn;
    const Tensor below = 2.0 * (nu + n) * jn / x - above;
    above = jn;
    jn = below;
  }
  norm = norm + std::tgamma(nu + 1.0) * jn;
  return jn * (x / 2.0).pow(nu) / norm;
}

/** Hankel's asymptotic J_nu(x) for float64 x >= 25 (40 terms). */
Tensor bessel_j_hankel(const Tensor& x, double nu) {
  Tensor term = ones_like(x), p = ones_like(x), q = zeros_like(x);
  for (int k = 1; k <= 40; ++k) {
    term = term * (4 * nu * nu - (2 * k - 1) * (2 * k - 1)) / (x * (8.0 * k));
    const double sign = ((k / 2) % 2) ? -1.0 : 1.0;
    if (k % 2) q = q + sign * term;
    else p = p + sign * term;
  }
  const Tensor chi = x - (nu / 2.0 + 0.25) * kPi;
  return (2.0 / (kPi * x)).sqrt() * (p * chi.cos() - q * chi.sin());
}

/** Ai(x) at float64 x: within [-2, 2] its Maclaurin series (A&S 10.4.2, 60 terms); beyond,
 *  (1 / pi) sqrt(x / 3) K_1/3(zeta) right and (sqrt(-x) / 3) (J_1/3 + J_-1/3)(zeta) left, with
 *  zeta = (2/3) |x|^(3/2), J by Miller's recurrence up to |x| = 12 and Hankel's series past it.
 *  NaN at +-inf, as torch's. */
Tensor airy_ai_value(const Tensor& d) {
  const Tensor near = d.abs() <= 2.0, right = d > 2.0, far_left = d < -12.0;
  const Tensor xs = where(near, d, 0.0), cube = xs * xs * xs;
  Tensor tf = ones_like(xs), tg = xs, f = tf, g = tg;
  for (int k = 1; k < 60; ++k) {
    tf = tf * cube / static_cast<double>((3 * k - 1) * (3 * k));
    tg = tg * cube / static_cast<double>((3 * k) * (3 * k + 1));
    f = f + tf;
    g = g + tg;
  }
  const Tensor series = 0.355028053887817239 * f - 0.258819403792806798 * g;
  const Tensor z = where(near.logical_or(isinf(d)), 3.0, d.abs()), zeta = 2.0 / 3.0 * z * z.sqrt();
  const Tensor k_side = (z / 3.0).sqrt() / kPi * (-zeta).exp() * scaled_k_beyond(zeta, 1.0 / 3.0);
  const Tensor zm = where(far_left, 30.0, zeta), zh = where(far_left, zeta, 30.0);
  const Tensor miller = bessel_j_fractional(zm, 1.0 / 3.0) + bessel_j_fractional(zm, -1.0 / 3.0);
  const Tensor hankel = bessel_j_hankel(zh, 1.0 / 3.0) + bessel_j_hankel(zh, -1.0 / 3.0);
  const Tensor j_side = z.sqrt() / 3.0 * where(far_left, hankel, miller);
  const Tensor r = where(near, series, where(right, k_side, j_side));
  return where(isinf(d), kNaN, r);
}

/** The value at each element's own degree k (float64, integer-valued) of the sequence that
 *  starts with p (degree 0) and q (degree 1) and goes on by step(j, p_j-2, p_j-1), run to the
 *  largest degree among the elements `needed` marks: read back, so that a trace (ug.jit,
 *  onnx.export), whose program would keep this call's count, refuses it. */
Tensor by_recurrence(const char* name, const Tensor& k, const Tensor& needed, Tensor p, Tensor q,
                     const std::function<Tensor(double j, const Tensor& p, const Tensor& q)>& step) {
  if (graph::detail::current_capture)
    fail<RuntimeError>("[", name,
                       "] runs its recurrence to the largest degree in n, read from the data: a compiled "
                       "program or an export cannot hold it; call it outside ug.jit");
  const double top = k.numel() == 0 ? 0.0 : where(needed.logical_and(isfinite(k)), k, 0.0).max().item<double>();
  Tensor result = where(k == 0.0, p, q);
  for (double j = 2.0; j <= top; ++j) {
    const Tensor r = step(j, p, q);
    result = where(k == j, r, result);
    p = q;
    q = r;
  }
  return result;
}

Tensor is_even(const Tensor& k) { return (k - 2.0 * (k / 2.0).floor()) == 0.0; }

/** 0 where the degree is negative (or NaN: torch's integer conversion makes it negative). */
Tensor zero_below_degree_0(const Tensor& k, const Tensor& r) { return where((k < 0.0).logical_or(isnan(k)), 0.0, r); }

/** Chebyshev's polynomial of the given kind ('t', 'u', 'v', 'w') of float64 x, degree k; the
 *  closed form in acos x inside (-1, 1) past degree `closed_from`, torch's values at +-1. */
Tensor chebyshev(const char* name, const Tensor& x, const Tensor& k, char kind, double closed_from) {
  const Tensor edge = x.abs() == 1.0, inside = (x.abs() < 1.0).logical_and(k > closed_from);
  const Tensor theta = where(inside, x, 0.0).acos();
  const Tensor even = is_even(k), sign = where(even, 1.0, full_like(k, -1.0));
  const Tensor odd_from_minus_one = where(x > 0.0, 1.0, sign);  // the -1 edge alternates
  Tensor closed, at_edge, first;
  switch (kind) {
    case 't':
      closed = (k * theta).cos();
      at_edge = odd_from_minus_one;
      first = x;
      break;
    case 'u': {
      const Tensor s = theta.sin();
      closed = where(s != 0.0, ((k + 1.0) * theta).sin() / s, (k + 1.0) * ((k + 1.0) * theta).cos() / x);
      at_edge = odd_from_minus_one * (k + 1.0);
      first = x + x;
      break;
    }
    case 'v': {
      const Tensor half_cos = (theta / 2.0).cos(), alternating = sign * (k + k + 1.0);
      closed = where((theta / 2.0).sin() != 1.0, ((k + 0.5) * theta).cos() / half_cos, alternating);
      at_edge = where(x > 0.0, 1.0, alternating);
      first = x + x - 1.0;
      break;
    }
    default: {
      const Tensor half_sin = (theta / 2.0).sin(), at_ends = where(x > 0.0, k + k + 1.0, sign);
      closed = where(half_sin != 0.0, ((k + 0.5) * theta).sin() / where(half_sin != 0.0, half_sin, 1.0), at_ends);
      at_edge = at_ends;
      first = x + x + 1.0;
    }
  }
  const Tensor rec = by_recurrence(name, k, edge.logical_or(inside).logical_not(), ones_like(x), first,
                                   [&x](double, const Tensor& p, const Tensor& q) { return (x + x) * q - p; });
  return zero_below_degree_0(k, where(edge, at_edge, where(inside, closed, rec)));
}

using PolynomialValue = std::function<Tensor(const Tensor& x, const Tensor& k, DType dtype)>;

/** value(x, degree) on x and n broadcast, in float64, n truncated to integers, in their
 *  floating dtype; without history. */
Tensor polynomial(const Tensor& x, const Tensor& n, const PolynomialValue& value) {
  const DType dtype = to_floating(promote_types(x.dtype(), n.dtype()));
  const Tensors b = broadcast_tensors({x.detach(), n.detach()});
  return value(b[0].to(DType::Float64), b[1].to(DType::Float64).trunc(), dtype).to(dtype);
}

}  // namespace

Tensor igamma(const Tensor& a, const Tensor& x) {
  return with_partials(
      "gammainc", {a, x}, [](const Tensors& d) { return incomplete_gamma_value(d[0], d[1], false); },
      [](size_t, const Tensors& in) { return igamma_slope(in[0].to(DType::Float64), in[1].to(DType::Float64)); },
      {"input", nullptr});
}

Tensor igammac(const Tensor& a, const Tensor& x) {
  return with_partials(
      "gammaincc", {a, x}, [](const Tensors& d) { return incomplete_gamma_value(d[0], d[1], true); },
      [](size_t, const Tensors& in) { return -igamma_slope(in[0].to(DType::Float64), in[1].to(DType::Float64)); },
      {"input", nullptr});
}

Tensor polygamma(int64_t n, const Tensor& x) {
  if (n < 0) fail<RuntimeError>("[polygamma] n must be non-negative, got ", n);
  if (n == 0) return digamma(x);
  // psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x)
  const double scale = (n % 2 ? 1.0 : -1.0) * std::tgamma(static_cast<double>(n) + 1.0);
  return with_partials(
      "polygamma", {x},
      [n, scale](const Tensors& d) {
        const Tensor r = scale * zeta_value(full_like(d[0], static_cast<double>(n + 1)), d[0]);
        // torch's trigamma (n = 1): 0 at inf, NaN at -inf; beyond, zeta's NaN and +-inf
        return n == 1 ? where(d[0] == kInf, 0.0, where(d[0] == -kInf, kNaN, r)) : r;
      },
      [n](size_t, const Tensors& in) { return polygamma(n + 1, in[0]); });
}

namespace special {

Tensor zeta(const Tensor& x, const Tensor& q) {
  return with_partials(
      "zeta", {x, q}, [](const Tensors& d) { return zeta_value(d[0], d[1]); },
      [](size_t, const Tensors& in) { return -in[0] * zeta(in[0] + 1.0, in[1]); }, {"self", nullptr});
}

Tensor xlog1py(const Tensor& x, const Tensor& y) {
  const DType dtype = to_floating(promote_types(x.dtype(), y.dtype()));
  const Tensor a = x.to(dtype), b = y.to(dtype);
  return where((a == 0.0).logical_and(isnan(b).logical_not()), 0.0, a * b.log1p());
}

Tensor entr(const Tensor& x) {
  return with_partials(
      "entr", {x},
      [](const Tensors& d) {
        const Tensor v = d[0], inside = v > 0.0;
        const Tensor r = where(inside, -v * where(inside, v, 1.0).log(), where(v == 0.0, 0.0, full_like(v, -kInf)));
        return where(isnan(v), v, r);
      },
      [](size_t, const Tensors& in) { return -(in[0].to(DType::Float64).log() + 1.0); });
}

Tensor ndtr(const Tensor& x) {
  return with_partials(
      "ndtr", {x}, [](const Tensors& d) { return 0.5 * erfc_value(-d[0] / kSqrt2); },
      [](size_t, const Tensors& in) {
        const Tensor v = in[0].to(DType::Float64);
        return (-0.5 * v.square()).exp() / kSqrt2Pi;
      });
}

Tensor log_ndtr(const Tensor& x) {
  return with_partials(
      "log_ndtr", {x}, [](const Tensors& d) { return log_ndtr_value(d[0]); },
      [](size_t, const Tensors& in) {
        const Tensor v = in[0].to(DType::Float64);
        return (-0.5 * v.square() - log_ndtr(v)).exp() / kSqrt2Pi;
      });
}

Tensor ndtri(const Tensor& p) {
  return with_partials(
      "ndtri", {p}, [](const Tensors& d) { return ndtri_value(d[0]); },
      [](size_t, const Tensors& in) { return (0.5 * ndtri(in[0].to(DType::Float64)).square()).exp() * kSqrt2Pi; });
}

Tensor erfcx(const Tensor& x) {
  return with_partials(
      "erfcx", {x}, [](const Tensors& d) { return erfcx_value(d[0]); },
      [](size_t, const Tensors& in) {
        const Tensor v = in[0].to(DType::Float64);
        return 2.0 * v * erfcx(v) - 2.0 / kSqrtPi;
      });
}

Tensor i0e(const Tensor& x) {
  return with_partials(
      "i0e", {x}, [](const Tensors& d) { return bessel_i(d[0], 0, true); },
      [](size_t, const Tensors& in) {
        const Tensor v = in[0].to(DType::Float64);
        return i1e(v) - v.sign() * i0e(v);
      });
}

Tensor i1(const Tensor& x) {
  // i1' = i0 - i1 / x, 1/2 at 0
  return with_partials(
      "i1", {x}, [](const Tensors& d) { return bessel_i(d[0], 1, false); },
      [](size_t, const Tensors& in) {
        const Tensor v = in[0].to(DType::Float64), zero = v == 0.0, vs = where(zero, 1.0, v);
        return where(zero, 0.5, i0(v) - i1(vs) / vs);
      });
}

Tensor i1e(const Tensor& x) {
  // i1e' = i0e - i1e (sign(x) + 1 / x), 1/2 at 0
  return with_partials(
      "i1e", {x}, [](const Tensors& d) { return bessel_i(d[0], 1, true); },
      [](size_t, const Tensors& in) {
        const Tensor v = in[0].to(DType::Float64), zero = v == 0.0, vs = where(zero, 1.0, v);
        return where(zero, 0.5, i0e(v) - i1e(vs) * (vs.sign() + 1.0 / vs));
      });
}

Tensor bessel_j0(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return bessel_j(d, 0); });
}
Tensor bessel_j1(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return bessel_j(d, 1); });
}
Tensor bessel_y0(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return bessel_y(d, 0); });
}
Tensor bessel_y1(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return bessel_y(d, 1); });
}
Tensor modified_bessel_i0(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return bessel_i(d, 0, false); });
}
Tensor modified_bessel_i1(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return bessel_i(d, 1, false); });
}
Tensor modified_bessel_k0(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return scaled_bessel_k(d, 0) * (-d).exp(); });
}
Tensor modified_bessel_k1(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return scaled_bessel_k(d, 1) * (-d).exp(); });
}
Tensor scaled_modified_bessel_k0(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return scaled_bessel_k(d, 0); });
}
Tensor scaled_modified_bessel_k1(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) { return scaled_bessel_k(d, 1); });
}
Tensor airy_ai(const Tensor& x) { return without_derivative(x, airy_ai_value); }
Tensor spherical_bessel_j0(const Tensor& x) {
  return without_derivative(x, [](const Tensor& d) {
    const Tensor zero = d == 0.0, safe = where(zero.logical_or(isinf(d)), 1.0, d);
    return where(zero, 1.0, where(isinf(d), 0.0, safe.sin() / safe));
  });
}

Tensor chebyshev_polynomial_t(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("chebyshev_polynomial_t", d, k, 't', 6.0);
  });
}
Tensor chebyshev_polynomial_u(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("chebyshev_polynomial_u", d, k, 'u', 8.0);
  });
}
Tensor chebyshev_polynomial_v(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("chebyshev_polynomial_v", d, k, 'v', 8.0);
  });
}
Tensor chebyshev_polynomial_w(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("chebyshev_polynomial_w", d, k, 'w', 8.0);
  });
}
// The shifted ones are the plain ones at 2x - 1 (torch takes the closed form from degree 7).
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("shifted_chebyshev_polynomial_t", d + d - 1.0, k, 't', 6.0);
  });
}
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("shifted_chebyshev_polynomial_u", d + d - 1.0, k, 'u', 6.0);
  });
}
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("shifted_chebyshev_polynomial_v", d + d - 1.0, k, 'v', 6.0);
  });
}
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    return chebyshev("shifted_chebyshev_polynomial_w", d + d - 1.0, k, 'w', 6.0);
  });
}

/** Hermite's H (physicists': step 2x q - 2(j - 1) p) or He (probabilists': x q - (j - 1) p);
 *  NaN past torch's degree limit for the result's dtype. */
Tensor hermite(const char* name, const Tensor& d, const Tensor& k, DType dtype, bool physicists) {
  const double limit = dtype == DType::Float64 ? 512.0 : dtype == DType::Float32 ? 128.0 : 1024.0;
  const Tensor beyond = k > limit;
  const double scale = physicists ? 2.0 : 1.0;
  const Tensor r = by_recurrence(
      name, k, beyond.logical_not(), ones_like(d), scale * d,
      [&d, scale](double j, const Tensor& p, const Tensor& q) { return scale * d * q - scale * (j - 1.0) * p; });
  return zero_below_degree_0(k, where(beyond, kNaN, r));
}

Tensor hermite_polynomial_h(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType dtype) {
    return hermite("hermite_polynomial_h", d, k, dtype, true);
  });
}
Tensor hermite_polynomial_he(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType dtype) {
    return hermite("hermite_polynomial_he", d, k, dtype, false);
  });
}

Tensor laguerre_polynomial_l(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    const Tensor r = by_recurrence(
        "laguerre_polynomial_l", k, d != 0.0, ones_like(d), 1.0 - d,
        [&d](double j, const Tensor& p, const Tensor& q) { return ((2.0 * j - 1.0 - d) * q - (j - 1.0) * p) / j; });
    return zero_below_degree_0(k, where(d == 0.0, 1.0, r));
  });
}

Tensor legendre_polynomial_p(const Tensor& x, const Tensor& n) {
  return polynomial(x, n, [](const Tensor& d, const Tensor& k, DType) {
    const Tensor edge = d.abs() == 1.0;
    const Tensor r = by_recurrence(
        "legendre_polynomial_p", k, edge.logical_not(), ones_like(d), d,
        [&d](double j, const Tensor& p, const Tensor& q) { return ((2.0 * j - 1.0) * d * q - (j - 1.0) * p) / j; });
    const Tensor at_edge = where(d.gt(0.0).logical_or(is_even(k)), 1.0, full_like(d, -1.0));
    return zero_below_degree_0(k, where(edge, at_edge, r));
  });
}

}  // namespace special

}  // namespace ug
