// Margin and embedding losses, composed from ops (so every one differentiates twice); each
// runs in float32 under autocast, as torch's losses do.
#include "ug/nn/functional/margin_loss.h"

#include <initializer_list>
#include <string>

#include "ug/nn/functional/activation.h"
#include "ug/graph/record.h"
#include "ug/nn/functional/loss_reduction.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

namespace ug::nn::functional {

namespace {

using detail::reduce;

/** max(0, x); its gradient is x's where x > 0. */
Tensor positive_part(const Tensor& x) { return x.clamp(0.0, std::nullopt); }

/** torch's check that the inputs of a loss over pairs or triplets have one number of dims. */
void require_same_dims(const char* op, std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs) {
    if (t->dim() == (*inputs.begin())->dim()) continue;
    std::string shapes;
    for (const Tensor* x : inputs) shapes += (shapes.empty() ? "" : ", ") + ug::detail::cat(x->shape());
    fail("[", op, "] all input tensors should have the same number of dimensions, got shapes ", shapes);
  }
}

}  // namespace

Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
                             std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, cosine_embedding_loss, x1, x2, target, margin, reduction);
  const ops::Reduction r = detail::checked_reduction(reduction, "cosine_embedding_loss", x1, "input1");
  if (x1.shape() != x2.shape())
    fail("[cosine_embedding_loss] input1 and input2 must have the same shape, got ", x1.shape(), " and ", x2.shape());
  if (x1.dim() != 1 && x1.dim() != 2)
    fail("[cosine_embedding_loss] expected 1-D or 2-D inputs, got shape ", x1.shape());
  if (target.dim() != x1.dim() - 1 || (target.dim() == 1 && target.size(0) != x1.size(0)))
    fail("[cosine_embedding_loss] ", target.dim(), "D target tensor of shape ", target.shape(),
         " does not match inputs of shape ", x1.shape());
  constexpr double eps = 1e-12;  // torch's EPSILON
  const int64_t d = x1.dim() - 1;
  Tensor prod = (x1 * x2).sum(Dims{d});
  Tensor m1 = (x1 * x1).sum(Dims{d}) + eps, m2 = (x2 * x2).sum(Dims{d}) + eps;
  Tensor cos = prod / (m1 * m2).sqrt();
  Tensor pos = 1 - cos, neg = positive_part(cos - margin);
  return reduce(where(target == 1, pos, 0.0) + where(target == -1, neg, 0.0), r);
}

Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
                           std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, margin_ranking_loss, x1, x2, target, margin, reduction);
  const char* op = "margin_ranking_loss";
  const ops::Reduction r = detail::checked_reduction(reduction, op, x1, "input1");
  require_same_dims(op, {&x1, &x2, &target});
  return reduce(positive_part(-target * (x1 - x2) + margin), r);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin, std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, hinge_embedding_loss, input, target, margin, reduction);
  const char* op = "hinge_embedding_loss";
  const ops::Reduction r = detail::checked_reduction(reduction, op, input, "input");
  // As torch: targets other than 1 and -1 add both terms.
  return reduce(where(target != 1, positive_part(margin - input), 0.0) + where(target != -1, input, 0.0), r);
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, soft_margin_loss, input, target, reduction);
  const char* op = "soft_margin_loss";
  const ops::Reduction r = detail::checked_reduction(reduction, op, input, "input");
  if (autograd::needs_grad({&target}))  // as torch, whose kernel has no target derivative
    fail<RuntimeError>("[soft_margin_loss] the function is not differentiable with respect to argument 'target' (",
                       target.dtype(), " of shape ", target.shape(), "): it cannot require grad");
  return reduce((-input * target).exp().log1p(), r);  // torch's formula: inf past exp's range, as there
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, multilabel_soft_margin_loss, input, target, weight, reduction);
  const char* op = "multilabel_soft_margin_loss";
  const ops::Reduction r = detail::checked_reduction(reduction, op, input, "input");
  if (input.dim() == 0) fail("[", op, "] expected an input of at least 1 dim [N, C] or [C], got a 0-d tensor");
  Tensor loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input));
  if (weight.defined()) loss = loss * weight;
  const int64_t c = input.dim() - 1;
  return reduce(loss.sum(Dims{c}) / static_cast<double>(input.size(c)), r);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, triplet_margin_loss, anchor, positive, negative, margin, p, eps,
                          swap, reduction);
  const char* op = "triplet_margin_loss";
  const ops::Reduction r = detail::checked_reduction(reduction, op, anchor, "anchor");
  require_same_dims(op, {&anchor, &positive, &negative});
  if (!(margin > 0)) fail("[triplet_margin_loss] margin must be greater than 0, got ", margin);
  Tensor d_pos = pairwise_distance(anchor, positive, p, eps);
  Tensor d_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps));
  return reduce(positive_part(d_pos - d_neg + margin), r);
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin, const Tensor& weight,
                         std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, multi_margin_loss, input, target, p, margin, weight, reduction);
  const char* op = "multi_margin_loss";
  const ops::Reduction r = detail::checked_reduction(reduction, op, input, "input");
  if (p != 1 && p != 2) fail("[multi_margin_loss] only p == 1 and p == 2 supported, got p = ", p);
  if (input.dim() > 2 || (input.dim() < 2 && input.numel() == 0) || (input.dim() == 2 && input.size(1) == 0))
    fail("[multi_margin_loss] expected a non-empty vector [C] or matrix [N, C], got shape ", input.shape());
  const int64_t n = input.dim() == 2 ? input.size(0) : 1, c = input.dim() == 0 ? 1 : input.size(-1);
  if (target.dim() > 1 || target.numel() != n)
    fail("[multi_margin_loss] inconsistent target size: expected ", n, " class indices, got shape ", target.shape(),
         " (input shape ", input.shape(), ")");
  if (is_floating(target.dtype()) || target.dtype() == DType::Bool)
    fail<TypeError>("[multi_margin_loss] expected class-index targets of an integer dtype, got ", target.dtype());
  if (weight.defined() && (weight.dim() != 1 || weight.numel() != c))
    fail("[multi_margin_loss] weight must be one-dimensional with ", c, " entries (one per class), got shape ",
         weight.shape());
  Tensor y = target.reshape({n, 1}).to(DType::Int64);
  if (n > 0 && ops::any_true((y < 0).logical_or(y >= c)))
    fail<IndexError>("[multi_margin_loss] target out of range: class indices must be in [0, ", c, ")");
  Tensor x = input.reshape({n, c});
  Tensor h = positive_part(x - x.gather(1, y) + margin);  // [N, C]: the margin each other class violates
  if (p == 2) h = h.square();
  if (weight.defined()) h = h * weight.index_select(0, y.flatten()).view({n, 1});
  Tensor is_target = arange(c, {.dtype = DType::Int64, .device = input.device()}).view({1, c}) == y;
  Tensor loss = where(is_target, 0.0, h).sum(Dims{1}) / static_cast<double>(c);
  return reduce(target.dim() == 0 ? loss.reshape({}) : loss, r);
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Float32, multilabel_margin_loss, input, target, reduction);
  const char* op = "multilabel_margin_loss";
  const ops::Reduction r = detail::checked_reduction(reduction, op, input, "input");
  if (input.dim() > 2 || (input.dim() == 2 && input.size(1) == 0))
    fail("[multilabel_margin_loss] expected a non-empty vector [C] or matrix [N, C], got shape ", input.shape());
  if (target.shape() != input.shape() || target.dtype() != DType::Int64)
    fail("[multilabel_margin_loss] expected int64 targets of the input's shape ", input.shape(), ", got ",
         target.dtype(), " ", target.shape());
  const int64_t c = input.dim() == 0 ? 1 : input.size(-1);
  const Tensor x = input.reshape({-1, c}), t = target.reshape({-1, c});
  // The target slots before each row's first -1, and the classes they name.
  const Tensor slot = (t == -1).to(DType::Int64).cumsum(1) == 0;
  const Tensor classes = where(slot, t, Scalar(0));
  const Tensor named = zeros_like(x).scatter_add(1, classes, slot.to(x.dtype())) > 0;
  // hinge[n, j, i] = max(0, 1 - x[n, t_j] + x[n, i]), kept for target slots j and other classes i.
  const Tensor hinge = positive_part(1.0 - x.gather(1, classes).unsqueeze(2) + x.unsqueeze(1));
  const Tensor keep = slot.unsqueeze(2).logical_and(named.logical_not().unsqueeze(1));
  Tensor loss = where(keep, hinge, Scalar(0.0)).sum({1, 2}) / static_cast<double>(c);
  if (input.dim() < 2) loss = loss.reshape({});
  return reduce(loss, r);
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const std::function<Tensor(const Tensor&, const Tensor&)>& distance,
                                         double margin, bool swap, std::string_view reduction) {
  const char* op = "triplet_margin_with_distance_loss";
  const ops::Reduction r = detail::parse_reduction(reduction, op);
  if (!(margin > 0)) fail("[triplet_margin_with_distance_loss] margin must be greater than 0, got ", margin);
  require_same_dims(op, {&anchor, &positive, &negative});
  auto d = [&](const Tensor& a, const Tensor& b) { return distance ? distance(a, b) : pairwise_distance(a, b); };
  const Tensor d_pos = d(anchor, positive);
  Tensor d_neg = d(anchor, negative);
  if (swap) d_neg = minimum(d_neg, d(positive, negative));
  return reduce(positive_part(d_pos - d_neg + margin), r);
}

}  // namespace ug::nn::functional
