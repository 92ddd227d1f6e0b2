// ctc_loss from ops: the forward (alpha) and backward (beta) recursions of the alignment
// lattice run over time, all samples and lattice positions at once (each step a few ops on
// [N, 2S + 1]); the loss is recorded with torch's gradient (detail::with_derivative).
#include "ug/nn/functional/ctc_loss.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "ug/nn/functional/elementwise_grad.h"
#include "ug/nn/functional/loss_reduction.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::nn::functional {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/** The alignment lattice of a batch: lattice position s of sample n is blank for even s and
 *  target s / 2 for odd s (blank past the sample's own 2 * S_n + 1 positions). */
struct Lattice {
  Tensor labels;     // [N, L] int64, L = 2 * S + 1
  Tensor skip;       // [N, L] bool: s - 2 -> s allowed (a label differing from the one before it)
  Tensor last;       // [N] int64: 2 * S_n, the last position
  Tensor steps;      // [N] int64: the input lengths
  int64_t time = 0;  // the longest input
};

/** t moved k positions along its last dim (k > 0: to later positions), `fill` where nothing
 *  moves in. */
Tensor moved(const Tensor& t, int64_t k, Scalar fill = Scalar(kNegInf)) {
  const int64_t n = t.size(-1), m = std::min<int64_t>(std::abs(k), n);
  Dims fill_shape(t.shape().begin(), t.shape().end());
  fill_shape.back() = m;
  const Tensor filled = full(fill_shape, fill, {.dtype = t.dtype(), .device = t.device()});
  if (m == n) return filled;
  return k > 0 ? cat({filled, t.narrow(-1, 0, n - m)}, -1) : cat({t.narrow(-1, m, n - m), filled}, -1);
}

/** log(exp(a) + exp(b) + exp(c)), -inf where all three are. */
Tensor log_add(const Tensor& a, const Tensor& b, const Tensor& c) { return stack({a, b, c}, 0).logsumexp({0}); }

/** log_alpha [time, N, L]: the log-probability of the alignments of targets' prefixes ending at
 *  each position at each step (held from a sample's last step on), and the loss [N]. */
std::pair<Tensor, Tensor> forward(const Tensor& lp, const Lattice& g) {
  const int64_t n = lp.size(1), l = g.labels.size(1);
  const Tensor picked = lp.gather(2, g.labels.unsqueeze(0).expand({lp.size(0), n, l}));  // [T, N, L]
  const Tensor pos = arange(l, {.dtype = DType::Int64, .device = lp.device()}).unsqueeze(0);
  const Tensor begins = pos.le(g.last.unsqueeze(1).clamp(std::nullopt, Scalar(1)));
  // no steps: the empty alignment, which ends at position 0
  const Tensor empty = where(pos.eq(0), Scalar(0.0), full({1, l}, Scalar(kNegInf), {.dtype = lp.dtype()}));
  Tensor alpha = where(g.steps.unsqueeze(1).gt(0), where(begins, picked[0], Scalar(kNegInf)), empty);
  std::vector<Tensor> alphas{alpha};
  for (int64_t t = 1; t < g.time; ++t) {
    const Tensor next = picked[t] + log_add(alpha, moved(alpha, 1), where(g.skip, moved(alpha, 2), Scalar(kNegInf)));
    alpha = where(g.steps.unsqueeze(1).gt(t), next, alpha);
    alphas.push_back(alpha);
  }
  const Tensor ends = stack({g.last, (g.last - 1).clamp(Scalar(0), std::nullopt)}, 1);
  const Tensor final_two = where(stack({g.last.ge(0), g.last.gt(0)}, 1), alpha.gather(1, ends), Scalar(kNegInf));
  return {stack(alphas, 0), -final_two.logsumexp({1})};
}

/** torch's gradient of the losses nll [N] in lp [T, N, C] for the losses' gradient g [N]:
 *  exp(lp) minus each class's share of the alignments at each step (alpha * beta / p), zero
 *  from a sample's last step on (and, with zero_infinity, for impossible alignments). */
Tensor gradient(const Tensor& g, const Tensor& lp, const Tensor& alphas, const Tensor& nll, const Lattice& lat,
                bool zero_infinity) {
  const int64_t n = lp.size(1), l = lat.labels.size(1), time = lat.time;
  const Tensor picked = lp.narrow(0, 0, time).gather(2, lat.labels.unsqueeze(0).expand({time, n, l}));
  const Tensor pos = arange(l, {.dtype = DType::Int64, .device = lp.device()}).unsqueeze(0);
  const Tensor at_end = pos.eq(lat.last.unsqueeze(1)).logical_or(pos.eq(lat.last.unsqueeze(1) - 1));
  const Tensor skip_after = moved(lat.skip, -2, Scalar(false));  // s -> s + 2 allowed
  std::vector<Tensor> betas(static_cast<size_t>(time));
  Tensor beta = full({n, l}, Scalar(kNegInf), {.dtype = lp.dtype(), .device = lp.device()});
  for (int64_t t = time - 1; t >= 0; --t) {
    const Tensor step = lat.steps.unsqueeze(1) - 1;  // each sample's last step
    const Tensor start = where(at_end, picked[t], Scalar(kNegInf));
    const Tensor back = picked[t] + log_add(beta, moved(beta, -1), where(skip_after, moved(beta, -2), Scalar(kNegInf)));
    beta = where(step.eq(t), start, where(step.gt(t), back, Scalar(kNegInf)));
    betas[static_cast<size_t>(t)] = beta;
  }
  const Tensor both = alphas + stack(betas, 0);  // [time, N, L], lp counted twice at each step
  const Tensor top = both.amax({2}, true);
  const Tensor shift = where(top.eq(kNegInf), Scalar(0.0), top);
  const Tensor shares = zeros({time, n, lp.size(2)}, {.dtype = lp.dtype(), .device = lp.device()})
                            .scatter_add(2, lat.labels.unsqueeze(0).expand({time, n, l}), (both - shift).exp());
  const Tensor lp_t = lp.narrow(0, 0, time);
  Tensor grad = lp_t.exp() - shares * (shift + nll.view({1, n, 1}) - lp_t).exp();
  const Tensor live =
      arange(time, {.dtype = DType::Int64, .device = lp.device()}).view({time, 1, 1}).lt(lat.steps.view({1, n, 1}));
  grad = where(live, grad, Scalar(0.0));
  if (zero_infinity) grad = where(nll.isinf().view({1, n, 1}), Scalar(0.0), grad);
  grad = grad * g.view({1, n, 1});
  if (time < lp.size(0)) grad = cat({grad, zeros({lp.size(0) - time, n, lp.size(2)}, {.dtype = lp.dtype()})}, 0);
  return grad;
}

void require_integers(const Tensor& t, const char* what) {
  if (is_floating(t.dtype()) || t.dtype() == DType::Bool)
    fail<TypeError>("[ctc_loss] expected ", what, " of an integer dtype, got ", t.dtype(), " (shape ", t.shape(), ")");
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, std::string_view reduction, bool zero_infinity) {
  const ops::Reduction r = detail::checked_reduction(reduction, "ctc_loss", log_probs, "log_probs");
  if (log_probs.dim() != 2 && log_probs.dim() != 3)
    fail("[ctc_loss] expected log_probs [T, N, C] or unbatched [T, C], got shape ", log_probs.shape());
  require_integers(targets, "targets");
  require_integers(input_lengths, "input_lengths");
  require_integers(target_lengths, "target_lengths");
  const bool batched = log_probs.dim() == 3;
  const Tensor lp = batched ? log_probs : log_probs.unsqueeze(1);
  const int64_t time = lp.size(0), n = lp.size(1), classes = lp.size(2);
  if (blank < 0 || blank >= classes)
    fail<RuntimeError>("[ctc_loss] blank must be in label range: blank ", blank, " for ", classes, " classes");
  const Tensor steps = input_lengths.to(DType::Int64).reshape({-1}),
               sizes = target_lengths.to(DType::Int64).reshape({-1});
  if (steps.numel() != n || sizes.numel() != n)
    fail<RuntimeError>("[ctc_loss] expected ", n, " input_lengths and target_lengths (log_probs ", log_probs.shape(),
                       "), got ", steps.numel(), " and ", sizes.numel());
  const int64_t longest = n ? steps.max().item<int64_t>() : 0, longest_target = n ? sizes.max().item<int64_t>() : 0;
  if (longest > time)
    fail<RuntimeError>("[ctc_loss] Expected input_lengths to have value at most ", time, ", but got value ", longest);
  if (n && (steps.min().item<int64_t>() < 0 || sizes.min().item<int64_t>() < 0))
    fail<RuntimeError>("[ctc_loss] input_lengths and target_lengths must be non-negative");
  const Options ints{.dtype = DType::Int64, .device = lp.device()};
  const Tensor span = arange(longest_target, ints).unsqueeze(0);
  Tensor padded;  // [N, S]: each sample's targets, blank past its length
  if (targets.dim() == (batched ? 2 : 1)) {
    const Tensor t = batched ? targets : targets.unsqueeze(0);
    if (t.size(0) != n || t.size(1) < longest_target)
      fail<RuntimeError>("[ctc_loss] Expected tensor to have size at least ", longest_target,
                         " at dimension 1, but got size ", t.size(1), " for argument #2 'targets' (targets shape ",
                         targets.shape(), ", log_probs shape ", log_probs.shape(), ")");
    padded = t.to(DType::Int64).narrow(1, 0, longest_target);
  } else if (targets.dim() == 1 && batched) {
    const int64_t total = sizes.sum().item<int64_t>();
    if (targets.numel() < total)
      fail<RuntimeError>("[ctc_loss] concatenated targets of shape ", targets.shape(), " hold fewer than the ", total,
                         " labels target_lengths adds up to");
    const Tensor starts = sizes.cumsum(0) - sizes;
    const Tensor at = (starts.unsqueeze(1) + span).clamp(Scalar(0), Scalar(std::max<int64_t>(total - 1, 0)));
    padded = total ? targets.to(DType::Int64).index_select(0, at.reshape({-1})).view({n, longest_target})
                   : zeros({n, longest_target}, ints);
  } else {
    fail("[ctc_loss] expected targets [N, S] or concatenated [sum(target_lengths)] (unbatched: [S]), got shape ",
         targets.shape(), " for log_probs of shape ", log_probs.shape());
  }
  const Tensor used = span.lt(sizes.unsqueeze(1));
  padded = where(used, padded, Scalar(blank));
  if (padded.numel() && (padded.min().item<int64_t>() < 0 || padded.max().item<int64_t>() >= classes))
    fail<IndexError>("[ctc_loss] target labels must lie in [0, ", classes, "), got labels from ",
                     padded.min().item<int64_t>(), " to ", padded.max().item<int64_t>());
  Lattice lat;
  const Tensor blanks = full({n, longest_target}, Scalar(blank), ints);
  lat.labels = cat({stack({blanks, padded}, 2).reshape({n, 2 * longest_target}), full({n, 1}, Scalar(blank), ints)}, 1);
  // as torch: any label position (odd), even one holding the blank, may skip the blank before it
  const Tensor odd = arange(2 * longest_target + 1, ints).remainder(2).eq(1).unsqueeze(0);
  lat.skip = odd.logical_and(lat.labels.ne(moved(lat.labels, 2, Scalar(-1))));
  lat.last = sizes * 2;
  lat.steps = steps;
  lat.time = std::max<int64_t>(longest, 1);
  // the forward's lattice and losses, which the gradient reads
  auto kept = std::make_shared<std::pair<Tensor, Tensor>>();
  Tensor nll = detail::with_derivative(
      "ctc_loss", lp,
      [&](const Tensor& x) {
        *kept = forward(x, lat);
        return kept->second;
      },
      [kept, lat, zero_infinity](const Tensor& g, const Tensor& x) {
        NoGradGuard no_grad;  // torch's gradient is not differentiated again
        return gradient(g, x, kept->first, kept->second, lat, zero_infinity);
      },
      false);
  if (zero_infinity) nll = where(nll.isinf(), Scalar(0.0), nll);
  if (r == ops::Reduction::Mean) return (nll / sizes.clamp(Scalar(1), std::nullopt).to(nll.dtype())).mean();
  if (r == ops::Reduction::Sum) return nll.sum();
  return batched ? nll : nll.squeeze({0});
}

}  // namespace ug::nn::functional
