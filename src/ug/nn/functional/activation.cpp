// Activations composed from elementwise ops. Where a branch of `where` could overflow (the
// exp of a large input), it reads a clamped copy of x, so the unused branch cannot turn
// a zero gradient into NaN.
#include "ug/nn/functional/activation.h"

#include <cmath>

#include "ug/nn/functional/elementwise_grad.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/opmath.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::nn::functional {

using detail::maybe_inplace;
using detail::with_derivative;

namespace {

/** alpha * (exp(x) - 1) for x <= 0 and x otherwise; the exp branch sees min(x, 0). */
Tensor elu_like(const Tensor& x, double alpha, double input_scale) {
  Tensor positive = x > 0;
  Tensor neg = where(positive, 0.0, x);
  return where(positive, x, (neg * input_scale).expm1() * alpha);
}

/** The p-norm along dim (kept), with a zero gradient at a zero vector (not NaN). */
Tensor safe_norm(const Tensor& x, double p, int64_t dim, bool keepdim) {
  if (std::isinf(p) || p == 0 || p == 1) return x.norm(p, Dims{dim}, keepdim);
  Tensor s = (p == 2 ? x * x : x.abs().pow(p)).sum(Dims{dim}, keepdim);
  Tensor nonzero = s > 0;
  Tensor r = where(nonzero, s, 1.0);
  return where(nonzero, p == 2 ? r.sqrt() : r.pow(1.0 / p), 0.0);
}

/** An elementwise composite, in place or not (maybe_inplace), computed in float32 for a 16-bit
 *  x and rounded once (ops/opmath.h). */
Tensor composite(const Tensor& x, bool inplace, const std::function<Tensor(const Tensor&)>& fn) {
  return maybe_inplace(x, inplace, [&fn](const Tensor& x) { return ops::in_opmath(fn, x); });
}

}  // namespace

Tensor relu(const Tensor& x, bool inplace) {
  if (!inplace) return ug::relu(x);
  Tensor out = x;
  return out.relu_();
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val, bool inplace) {
  if (min_val > max_val) fail("[hardtanh] min_val (", min_val, ") cannot be greater than max_val (", max_val, ")");
  // Nested where: the gradient reaches x only strictly inside (min_val, max_val), as in torch.
  return maybe_inplace(x, inplace,
                       [=](const Tensor& x) { return where(x <= min_val, min_val, where(x >= max_val, max_val, x)); });
}

Tensor relu6(const Tensor& x, bool inplace) { return hardtanh(x, 0.0, 6.0, inplace); }

Tensor leaky_relu(const Tensor& x, double negative_slope, bool inplace) {
  return composite(x, inplace, [=](const Tensor& x) { return where(x > 0, x, x * negative_slope); });
}

Tensor elu(const Tensor& x, double alpha, bool inplace) {
  return composite(x, inplace, [=](const Tensor& x) { return elu_like(x, alpha, 1.0); });
}

Tensor selu(const Tensor& x, bool inplace) {
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  return composite(x, inplace, [=](const Tensor& x) { return elu_like(x, alpha, 1.0) * scale; });
}

Tensor celu(const Tensor& x, double alpha, bool inplace) {
  if (alpha == 0) fail("[celu] ZeroDivisionError: alpha cannot be 0");
  return composite(x, inplace, [=](const Tensor& x) { return elu_like(x, alpha, 1.0 / alpha); });
}

Tensor gelu(const Tensor& x, std::string_view approximate) { return ug::gelu(x, approximate); }

Tensor silu(const Tensor& x, bool inplace) {
  return maybe_inplace(x, inplace, [](const Tensor& x) { return ug::silu(x); });
}

Tensor mish(const Tensor& x, bool inplace) {
  return composite(x, inplace, [](const Tensor& x) { return x * softplus(x).tanh(); });
}

Tensor sigmoid(const Tensor& x) { return ug::sigmoid(x); }

Tensor tanh(const Tensor& x) { return ug::tanh(x); }

Tensor logsigmoid(const Tensor& x) {
  // min(x, 0) - log1p(exp(-|x|)); the derivative is sigmoid(-x), also at x = 0.
  return ops::in_opmath(
      [](const Tensor& x) {
        return with_derivative(
            "logsigmoid", x, [](const Tensor& x) { return where(x < 0, x, 0.0) - (-x.abs()).exp().log1p(); },
            [](const Tensor& g, const Tensor& x) { return g * (-x).sigmoid(); });
      },
      x);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (ops::is_16_bit(x.dtype()))
    return ops::in_opmath([=](const Tensor& x) { return softplus(x, beta, threshold); }, x);
  return with_derivative(
      "softplus", x,
      [beta, threshold](const Tensor& x) {
        Tensor linear = x * beta > threshold;
        return where(linear, x, (where(linear, 0.0, x) * beta).exp().log1p() / beta);
      },
      [beta, threshold](const Tensor& g, const Tensor& x) {
        Tensor bx = x * beta;
        return where(bx > threshold, g, g * bx.sigmoid());
      });
}

Tensor softsign(const Tensor& x) { return x / (x.abs() + 1); }

Tensor hardsigmoid(const Tensor& x, bool inplace) {
  return composite(x, inplace, [](const Tensor& x) { return hardtanh(x + 3, 0.0, 6.0) / 6; });
}

Tensor hardswish(const Tensor& x, bool inplace) {
  return composite(x, inplace, [](const Tensor& x) {
    return with_derivative(
        "hardswish", x, [](const Tensor& x) { return x * hardtanh(x + 3, 0.0, 6.0) / 6; },
        [](const Tensor& g, const Tensor& x) { return where(x <= -3, 0.0, where(x < 3, g * (x / 3 + 0.5), g)); });
  });
}

Tensor threshold(const Tensor& x, double threshold, double value, bool inplace) {
  return maybe_inplace(x, inplace, [=](const Tensor& x) { return where(x > threshold, x, value); });
}

Tensor hardshrink(const Tensor& x, double lambd) { return where(x.abs() > lambd, x, 0.0); }

Tensor softshrink(const Tensor& x, double lambd) {
  if (!(lambd >= 0)) fail("[softshrink] lambd must be >= 0, got ", lambd);
  return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, 0.0));
}

Tensor tanhshrink(const Tensor& x) { return x - x.tanh(); }

Tensor prelu(const Tensor& x, const Tensor& weight) {
  if (autocast::active()) [[unlikely]]  // on torch's lower-precision list
    return autocast::call(graph::Autocast::Lower, prelu, x, weight);
  if (weight.dim() > 1) fail("[prelu] weight must be a scalar or 1-d, got shape ", weight.shape());
  const int64_t n = weight.numel(), channels = x.dim() >= 2 ? x.size(1) : 1;
  if (n != 1 && n != channels)
    fail("[prelu] weight has ", n, " entries but the input (shape ", x.shape(), ") has ", channels, " channels");
  Dims shape(static_cast<size_t>(std::max<int64_t>(x.dim() - 1, 0)), 1);
  if (!shape.empty()) shape[0] = n;
  return where(x > 0, x, x * weight.reshape(shape));
}

Tensor glu(const Tensor& x, int64_t dim) {
  if (x.dim() == 0) fail("[glu] does not support scalars because halving size must be even");
  const int64_t d = wrap_dim(dim, x.dim(), "glu");
  if (x.size(d) % 2 != 0)
    fail("[glu] halving dimension must be even, but dimension ", d, " is size ", x.size(d), " (shape ", x.shape(), ")");
  const int64_t half = x.size(d) / 2;
  return x.narrow(d, 0, half) * x.narrow(d, half, half).sigmoid();
}

int64_t implicit_softmax_dim(const Tensor& x) { return x.dim() == 0 || x.dim() == 1 || x.dim() == 3 ? 0 : 1; }

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return (dtype ? x.to(*dtype) : x).softmax(dim);
}

Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return (dtype ? x.to(*dtype) : x).log_softmax(dim);
}

Tensor softmin(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return (-(dtype ? x.to(*dtype) : x)).softmax(dim);
}

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
  return x / safe_norm(x, p, wrap_dim(dim, x.dim(), "normalize"), true).clamp(eps, std::nullopt);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  Shape shape = broadcast_shapes(x1.shape(), x2.shape(), "cosine_similarity");
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t d = wrap_dim(dim, nd, "cosine_similarity");
  Tensor a = x1.expand(shape), b = x2.expand(shape);
  // As torch: each input is divided by its own norm, clamped to eps without changing the
  // gradient (torch clamps in place under no_grad).
  auto norm_of = [&](const Tensor& t) {
    Tensor n = safe_norm(t, 2, d, true);
    return n + (n.clamp(eps, std::nullopt) - n).detach();
  };
  return ((a / norm_of(a)) * (b / norm_of(b))).sum(Dims{d});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  const int64_t nd = std::max(x1.dim(), x2.dim());
  if (nd == 0) fail("[pairwise_distance] expected at least 1-D inputs, got shapes ", x1.shape(), " and ", x2.shape());
  return safe_norm(x1 - x2 + eps, p, nd - 1, keepdim);
}

Tensor pdist(const Tensor& input, double p) {
  if (input.dim() != 2)
    fail("[pdist] expected a 2-D input [N, M], got shape ", input.shape(), " (", input.dtype(), ")");
  if (!is_floating(input.dtype())) fail<TypeError>("[pdist] expected a floating-point input, got ", input.dtype());
  if (p < 0) fail("[pdist] only supports non-negative p values, got ", p);
  const int64_t n = input.size(0), pairs = n * (n - 1) / 2;
  Tensor first = empty({pairs}, {.dtype = DType::Int64}), second = empty({pairs}, {.dtype = DType::Int64});
  int64_t* a = first.data_ptr<int64_t>();
  int64_t* b = second.data_ptr<int64_t>();
  for (int64_t i = 0, k = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j, ++k) {
      a[k] = i;
      b[k] = j;
    }
  return safe_norm(input.index_select(0, first) - input.index_select(0, second), p, 1, false);
}

Tensor rrelu(const Tensor& x, double lower, double upper, bool training, bool inplace) {
  if (!is_floating(x.dtype())) fail<TypeError>("[rrelu] expected a floating-point input, got ", x.dtype());
  if (lower > upper) fail("[rrelu] lower bound ", lower, " must not exceed upper bound ", upper);
  if (!training) return leaky_relu(x, (lower + upper) / 2, inplace);
  const Tensor slope = rand(x.shape(), {.dtype = x.dtype()}) * (upper - lower) + lower;
  return maybe_inplace(x, inplace, [&](const Tensor& v) { return where(v >= 0, v, v * slope); });
}

Tensor gumbel_softmax(const Tensor& logits, double tau, bool hard, int64_t dim) {
  if (!is_floating(logits.dtype()))
    fail<TypeError>("[gumbel_softmax] expected floating-point logits, got ", logits.dtype());
  if (!(tau > 0)) fail("[gumbel_softmax] tau must be positive, got ", tau);
  // -log(E), E ~ Exp(1) = -log(U): standard Gumbel noise.
  const Tensor gumbels = -(-(1.0 - rand(logits.shape(), {.dtype = logits.dtype()})).log()).log();
  const int64_t d = wrap_dim(dim, logits.dim(), "gumbel_softmax");
  const Tensor soft = ((logits + gumbels) / tau).softmax(d);
  if (!hard) return soft;
  const Tensor one_hot = scatter(zeros_like(soft), d, soft.argmax(d, true), 1.0);
  return one_hot - soft.detach() + soft;
}

}  // namespace ug::nn::functional
