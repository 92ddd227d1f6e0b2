// Losses composed from ops (log_softmax, gather, where, sums), so every one differentiates
// twice; binary_cross_entropy records its own derivative, torch's clamped formula. nll_loss
// on [N, C] / [C] inputs and cross_entropy on [N, C] logits over class indices, classification's
// hot path, are the fused ops ops::nll_loss_fused and ops::cross_entropy (ops/nn.h): one backend
// kernel each way instead of about fifteen ops.
#include "ug/nn/functional/loss.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "ug/graph/capture.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/nn/functional/activation.h"
#include "ug/nn/functional/loss_reduction.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/nn.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

namespace ug::nn::functional {

namespace {

using detail::parse_reduction;
using detail::reduce;
using detail::require_floating;
using ops::Reduction;

/** input - target for the elementwise losses; the operands broadcast (torch warns, then does too). */
Tensor difference(const Tensor& input, const Tensor& target, const char* op) {
  require_floating(input, op, "input");
  return input - target;
}

/** loss * weight (weight of loss's shape, optional); "mean" divides by sum(weight) when
 *  by_weight_sum, else by the element count. */
Tensor weighted(const Tensor& loss, const Tensor& weight, Reduction r, const char* op, bool by_weight_sum) {
  if (!weight.defined()) return reduce(loss, r);
  if (weight.shape() != loss.shape())
    fail("[", op, "] Weights and input must have the same size, got ", weight.shape(), " and ", loss.shape());
  Tensor l = loss * weight;
  return r == Reduction::Mean && by_weight_sum ? l.sum() / weight.sum() : reduce(l, r);
}

/** The class dim of logits / log-probabilities: 0 for a single [C] sample, else 1. */
int64_t class_dim(const Tensor& input) { return input.dim() == 1 ? 0 : 1; }

void check_weight(const Tensor& weight, int64_t classes, const char* op) {
  if (weight.defined() && (weight.dim() != 1 || weight.size(0) != classes))
    fail("[", op, "] weight tensor should be defined either for all ", classes,
         " classes or no classes but got weight of shape ", weight.shape());
}

/** Checks class-index targets against input [N, C, d...] / [C]; returns the indices with
 *  ignored entries replaced by 0 (safe to gather) and the mask of ignored entries. */
std::pair<Tensor, Tensor> class_targets(const Tensor& input, const Tensor& target, int64_t ignore_index,
                                        const char* op) {
  if (input.dim() == 0) fail("[", op, "] input must have at least 1 dimension (classes), got a 0-d tensor");
  if (is_floating(target.dtype()) || target.dtype() == DType::Bool)
    fail<TypeError>("[", op, "] expected class-index targets of an integer dtype (int64), got ", target.dtype(),
                    " (target shape ", target.shape(), ", input shape ", input.shape(), ")");
  Shape expected = input.shape();
  expected.erase(expected.begin() + class_dim(input));
  if (target.shape() != expected) {
    if (input.dim() >= 2 && (target.dim() == 0 || target.size(0) != input.size(0)))
      fail("[", op, "] Expected input batch_size (", input.size(0), ") to match target batch_size (",
           target.dim() ? target.size(0) : 0, "): input shape ", input.shape(), ", target shape ", target.shape());
    fail("[", op, "] expected target of shape ", expected, " for input of shape ", input.shape(), ", got ",
         target.shape());
  }
  const int64_t classes = input.size(class_dim(input));
  Tensor ignored = target == ignore_index;
  Tensor safe = where(ignored, Scalar(int64_t{0}), target).to(DType::Int64);
  if (safe.numel() > 0) {
    // The first target out of bounds in any example.
    const auto bad = ops::read_every_example(safe, [classes](const Tensor& all) -> std::optional<int64_t> {
      const Tensor out = (all < 0).logical_or(all >= classes);
      if (!out.any().item<bool>()) return std::nullopt;
      return all.masked_select(out)[0].item<int64_t>();
    });
    if (bad)
      fail<IndexError>("[", op, "] Target ", *bad, " is out of bounds: class indices must be in [0, ", classes,
                       ") or equal ignore_index (", ignore_index, ")");
  }
  return {safe, ignored};
}

/** weight[target] per element ([N, d...]), 0 where the target is ignored. */
Tensor target_weights(const Tensor& weight, const Tensor& safe, const Tensor& ignored, const Tensor& like) {
  Tensor w = weight.defined() ? weight.index_select(0, safe.flatten()).view(safe.shape())
                              : ones(safe.shape(), {.dtype = like.dtype(), .device = like.device()});
  return where(ignored, 0.0, w);
}

/** weight viewed [1, C, 1, ...] to broadcast against input along the class dim. */
Tensor class_broadcast(const Tensor& weight, const Tensor& input) {
  Dims shape(static_cast<size_t>(input.dim()), 1);
  shape[class_dim(input)] = weight.size(0);
  return weight.view(shape);
}

const graph::OpDef kBinaryCrossEntropy("binary_cross_entropy", graph::Autocast::Float32);

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& o) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, nll_loss, input, target, o);
  const char* op = "nll_loss";
  Reduction r = parse_reduction(o.reduction, op);
  require_floating(input, op, "input");
  if (input.dim() == 0) fail("[", op, "] input must have at least 1 dimension (classes), got a 0-d tensor");
  const int64_t cd = class_dim(input);
  check_weight(o.weight, input.size(cd), op);
  if (ops::nll_loss_fuses(input, target, o.weight))
    return ops::nll_loss_fused(input, target, o.weight, o.ignore_index, r);
  auto [safe, ignored] = class_targets(input, target, o.ignore_index, op);
  Tensor picked = input.gather(cd, safe.unsqueeze(cd)).squeeze(Dims{cd});
  Tensor w = target_weights(o.weight, safe, ignored, input);
  Tensor loss = -picked * w;
  if (r == Reduction::Mean) return loss.sum() / w.sum();  // all ignored: 0 / 0 = nan, as torch
  return reduce(loss, r);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& o) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, cross_entropy, input, target, o);
  const char* op = "cross_entropy";
  Reduction r = parse_reduction(o.reduction, op);
  require_floating(input, op, "input");
  if (input.dim() == 0) fail("[cross_entropy] input must have at least 1 dimension (classes), got a 0-d tensor");
  if (o.label_smoothing < 0 || o.label_smoothing > 1)
    fail("[cross_entropy] label_smoothing must be between 0.0 and 1.0, got ", o.label_smoothing);
  const int64_t cd = class_dim(input), classes = input.size(cd);
  check_weight(o.weight, classes, op);
  const double s = o.label_smoothing;
  if (s <= 0 && !is_floating(target.dtype()) && ops::cross_entropy_fuses(input, target, o.weight))
    return ops::cross_entropy(input, target, o.weight, o.ignore_index, r);
  Tensor logp = input.log_softmax(cd);
  if (is_floating(target.dtype())) {
    // Class probabilities: -sum_c w_c t_c log p_c per sample; "mean" averages over samples.
    if (target.shape() != input.shape())
      fail("[cross_entropy] class-probability targets must have the input's shape ", input.shape(), ", got ",
           target.shape());
    Tensor t = s > 0 ? target * (1 - s) + s / static_cast<double>(classes) : target;
    Tensor prod = logp * t;
    if (o.weight.defined()) prod = prod * class_broadcast(o.weight, input);
    Tensor loss = -prod.sum(Dims{cd});
    if (r == Reduction::Mean) return loss.sum() / static_cast<double>(classes ? input.numel() / classes : 0);
    return reduce(loss, r);
  }
  Tensor nll = nll_loss(logp, target, {.weight = o.weight, .ignore_index = o.ignore_index, .reduction = o.reduction});
  if (s <= 0) return nll;
  // torch's label smoothing: (1 - s) * nll + s / C * (the loss against a uniform target),
  // the latter normalised like nll's mean (by the weights of the targets).
  auto [safe, ignored] = class_targets(input, target, o.ignore_index, op);
  Tensor lw = o.weight.defined() ? logp * class_broadcast(o.weight, input) : logp;
  Tensor smooth = where(ignored, 0.0, -lw.sum(Dims{cd}));
  Tensor reduced =
      r == Reduction::Mean ? smooth.sum() / target_weights(o.weight, safe, ignored, input).sum() : reduce(smooth, r);
  return nll * (1 - s) + reduced * (s / static_cast<double>(classes));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction, const Tensor& weight) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, mse_loss, input, target, reduction, weight);
  Reduction r = parse_reduction(reduction, "mse_loss");
  if (r != Reduction::None && !weight.defined()) {
    require_floating(input, "mse_loss", "input");
    return ops::mse_loss(input, target, r);
  }
  // square, not d * d: its gradient is one product of d's size, not two and their sum.
  return weighted(difference(input, target, "mse_loss").square(), weight, r, "mse_loss", true);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction, const Tensor& weight) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, l1_loss, input, target, reduction, weight);
  Reduction r = parse_reduction(reduction, "l1_loss");
  return weighted(difference(input, target, "l1_loss").abs(), weight, r, "l1_loss", true);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction, double beta) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, smooth_l1_loss, input, target, reduction, beta);
  Reduction r = parse_reduction(reduction, "smooth_l1_loss");
  if (beta < 0) fail("[smooth_l1_loss] does not support negative values for beta, got ", beta);
  Tensor z = difference(input, target, "smooth_l1_loss").abs();
  if (beta == 0) return reduce(z, r);
  return reduce(where(z < beta, z * z * (0.5 / beta), z - 0.5 * beta), r);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction, double delta,
                  const Tensor& weight) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, huber_loss, input, target, reduction, delta, weight);
  Reduction r = parse_reduction(reduction, "huber_loss");
  if (delta <= 0) fail("[huber_loss] does not support non-positive values for delta, got ", delta);
  Tensor z = difference(input, target, "huber_loss").abs();
  return weighted(where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta), weight, r, "huber_loss", false);
}

namespace {

/** torch's clamped binary cross entropy of input x and target t (of x's dtype), elementwise:
 *  computed without recording, with its own derivatives. */
Tensor binary_cross_entropy_elementwise(const Tensor& input, const Tensor& t) {
  graph::OpCall call(kBinaryCrossEntropy);
  Tensor loss;
  {
    NoGradGuard no_grad;
    loss = -(t * input.log().clamp(-100.0, std::nullopt) + (1 - t) * (1 - input).log().clamp(-100.0, std::nullopt));
  }
  // Losses have no graph form: a program calls it back.
  if (call.capturing())
    call.set_replay(
        [](const graph::Tensors& in) { return graph::Tensors{binary_cross_entropy_elementwise(in[0], in[1])}; },
        graph::ReplaySizes::None);
  // torch's derivatives: (x - t) / max(x (1 - x), 1e-12) for the input (the composed form
  // would give inf at 0 and 1), the log-odds log(1 - x) - log(x) for the target. The forward
  // rule is the same pair, written with ops that record, so that it differentiates again.
  auto d_input = [](const Tensor& x, const Tensor& t) { return (x - t) / (x * (1 - x)).clamp(1e-12, std::nullopt); };
  auto d_target = [](const Tensor& x) { return (-x).log1p() - x.log(); };
  call.finish(
      {&input, &t}, {&loss}, {graph::input(input), graph::input(t)},
      [=, gx = autograd::requires_grad(input), gt = autograd::requires_grad(t)](graph::Saved s, graph::Tensors&& g) {
        const Tensor &x = s[0], &t = s[1];
        return graph::Tensors{gx ? g[0] * d_input(x, t) : Tensor(), gt ? g[0] * d_target(x) : Tensor()};
      },
      [&](const graph::Tensors& tn) {
        Tensor dx = tn[0].defined() ? tn[0] * d_input(input, t) : Tensor();
        Tensor dt = tn[1].defined() ? tn[1] * d_target(input) : Tensor();
        return graph::Tensors{dx.defined() && dt.defined() ? dx + dt : dx.defined() ? dx : dt};
      });
  return loss;
}

}  // namespace

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            std::string_view reduction) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, binary_cross_entropy, input, target, weight, reduction);
  const char* op = "binary_cross_entropy";
  Reduction r = parse_reduction(reduction, op);
  require_floating(input, op, "input");
  if (target.shape() != input.shape())
    fail("[binary_cross_entropy] Using a target size (", target.shape(), ") that is different to the input size (",
         input.shape(), ") is deprecated. Please ensure they have the same size.");
  if (input.numel() > 0 && !ops::all_true((input >= 0).logical_and(input <= 1)))
    fail<RuntimeError>("[binary_cross_entropy] all elements of input should be between 0 and 1");
  Tensor loss = binary_cross_entropy_elementwise(input, target.to(input.dtype()));
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, r);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const BceWithLogitsOptions& o) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, binary_cross_entropy_with_logits, input, target, o);
  const char* op = "binary_cross_entropy_with_logits";
  Reduction r = parse_reduction(o.reduction, op);
  require_floating(input, op, "input");
  if (target.shape() != input.shape())
    fail("[binary_cross_entropy_with_logits] Target size (", target.shape(), ") must be the same as input size (",
         input.shape(), ")");
  // (1 - t) x - lw log(sigmoid(x)), lw = 1 + (pos_weight - 1) t: finite for any logit.
  Tensor t = target.to(input.dtype());
  Tensor ls = logsigmoid(input);
  Tensor loss = o.pos_weight.defined() ? (1 - t) * input - ((o.pos_weight - 1) * t + 1) * ls : (1 - t) * input - ls;
  if (o.weight.defined()) loss = loss * o.weight;
  return reduce(loss, r);
}

Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction, bool log_target) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, kl_div, input, target, reduction, log_target);
  Reduction r = parse_reduction(reduction, "kl_div", true);
  require_floating(input, "kl_div", "input");
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - input);
  } else {
    // xlogy(t, t) - t x, with 0 log 0 = 0 (and a zero gradient there).
    Tensor zero = target == 0;
    Tensor safe = where(zero, 1.0, target);
    loss = where(zero, 0.0, target * safe.log()) - target * input;
  }
  return reduce(loss, r);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        std::string_view reduction) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, poisson_nll_loss, input, target, log_input, full, eps, reduction);
  Reduction r = parse_reduction(reduction, "poisson_nll_loss");
  require_floating(input, "poisson_nll_loss", "input");
  Tensor loss = log_input ? input.exp() - target * input : input - target * (input + eps).log();
  if (full) {
    // t log t - t + log(2 pi t) / 2 where t > 1, 0 elsewhere (evaluated at a safe t there, so
    // that no log of 0 reaches a gradient).
    Tensor small = target <= 1;
    Tensor t = where(small, 2.0, target);
    loss = loss + where(small, 0.0, t * t.log() - t + 0.5 * (t * (2 * std::numbers::pi)).log());
  }
  return reduce(loss, r);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full, double eps,
                         std::string_view reduction) {
  if (autocast::active()) [[unlikely]]  // losses run in float32
    return autocast::call(graph::Autocast::Float32, gaussian_nll_loss, input, target, var, full, eps, reduction);
  Reduction r = parse_reduction(reduction, "gaussian_nll_loss");
  require_floating(input, "gaussian_nll_loss", "input");
  Tensor v = var;
  if (var.shape() != input.shape()) {
    const Shape& in = input.shape();
    const Shape& vs = var.shape();
    const bool short_one =
        input.dim() >= 1 && vs.size() + 1 == in.size() && std::equal(vs.begin(), vs.end(), in.begin());
    const bool last_one = input.dim() >= 1 && vs.size() == in.size() && vs.back() == 1 &&
                          std::equal(vs.begin(), vs.end() - 1, in.begin());
    if (!short_one && !last_one)
      fail("[gaussian_nll_loss] var is of incorrect size: ", var.shape(), " for input ", input.shape(),
           " (give input's shape, or it without its last dim, or with 1 there)");
    if (short_one) v = var.unsqueeze(-1);
  }
  if (ops::any_true(var < 0)) fail("[gaussian_nll_loss] var has negative entry/entries");
  // The value clamped, the gradient passed through: var + (clamped - var) with the difference
  // held constant (exactly var where it is at least eps).
  Tensor clamped;
  {
    NoGradGuard no_grad;
    clamped = v.clamp(std::optional<Scalar>(eps), std::nullopt) - v;
  }
  v = v + clamped;
  Tensor loss = 0.5 * (v.log() + (input - target).square() / v);
  if (full) loss = loss + 0.5 * std::log(2 * std::numbers::pi);
  return reduce(loss, r);
}

}  // namespace ug::nn::functional
