// nll_loss on [N, C] / [C] inputs, and cross_entropy on [N, C] logits over class indices,
// classification's hot path, as one op each way (nn::functional composes the other cases from
// ops).
#include "ug/backend/backend.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/nn.h"
#include "ug/ops/reduce.h"

namespace ug::ops {

namespace {

/** [N, C] or [C] float32/float64 input with targets of the matching shape, class weights that
 *  take no gradient, no vmap or forward mode. */
bool class_loss_fuses(const Tensor& input, const Tensor& target, const Tensor& weight) {
  const bool dtype_ok = input.dtype() == DType::Float32 || input.dtype() == DType::Float64;
  const bool target_ok =
      target.dtype() == DType::Int64 || target.dtype() == DType::Int32 || target.dtype() == DType::UInt8;
  const bool shape_ok = input.dim() == 2   ? target.dim() == 1 && target.size(0) == input.size(0)
                        : input.dim() == 1 ? target.dim() == 0
                                           : false;
  const bool weight_ok = !weight.defined() || (weight.dtype() == input.dtype() && !autograd::requires_grad(weight));
  return dtype_ok && target_ok && shape_ok && weight_ok && !batching::max_level({&input, &target, &weight}) &&
         !forward::active();
}

}  // namespace

/** Whether nll_loss can run as one kernel: [N, C] or [C] float32/float64 input with targets
 *  of the matching shape, class weights that take no gradient, no vmap or forward mode, and no
 *  capture (its gradient is a kernel call, which a captured graph of ops could not follow). */
bool nll_loss_fuses(const Tensor& input, const Tensor& target, const Tensor& weight) {
  return class_loss_fuses(input, target, weight) && !graph::detail::current_capture;
}

bool cross_entropy_fuses(const Tensor& input, const Tensor& target, const Tensor& weight) {
  return input.dim() == 2 && class_loss_fuses(input, target, weight);
}

namespace {
const graph::OpDef kNllLoss("nll_loss", graph::Autocast::Float32);            // cast by nn::functional::nll_loss
const graph::OpDef kCrossEntropy("cross_entropy", graph::Autocast::Float32);  // cast by nn::functional
const graph::OpDef kCrossEntropyBackward("cross_entropy_backward");

const char* reduction_name(Reduction r) { return r == Reduction::Mean ? "mean" : r == Reduction::Sum ? "sum" : "none"; }

/** Each sample's class weight (weight[t], or 1 without weights) as x's dtype, 0 where t is
 *  ignore_index, and the targets with those set to 0 (safe to gather). */
std::pair<Tensor, Tensor> sample_weights(const Tensor& x, const Tensor& target, const Tensor& weight,
                                         int64_t ignore_index) {
  Tensor ignored = target == ignore_index;
  Tensor safe = where(ignored, Scalar(int64_t{0}), target).to(DType::Int64);
  Tensor w = weight.defined() ? where(ignored, 0.0, weight.index_select(0, safe)) : ignored.logical_not().to(x.dtype());
  return {safe, w};
}

/** The coefficient of each row of cross_entropy's gradient per unit of the loss's gradient:
 *  the sample's weight, over the total weight for a mean; and the targets made safe. */
std::pair<Tensor, Tensor> row_coefficients(const Tensor& x, const Tensor& target, const Tensor& weight,
                                           int64_t ignore_index, Reduction r) {
  auto [safe, w] = sample_weights(x, target, weight, ignore_index);
  return {safe, r == Reduction::Mean ? w / w.sum() : w};
}

Tensor one_hot_rows(const Tensor& x, const Tensor& safe) {
  return (arange(x.size(1), {.dtype = DType::Int64, .device = x.device()}) == safe.unsqueeze(1)).to(x.dtype());
}

/** cross_entropy composed of ops, each with its own rules (vmap, forward mode). */
Tensor cross_entropy_formula(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                             Reduction r) {
  auto [safe, w] = sample_weights(x, target, weight, ignore_index);
  Tensor loss = -log_softmax(x, 1).gather(1, safe.unsqueeze(1)).squeeze(Dims{1}) * w;
  if (r == Reduction::Mean) return loss.sum() / w.sum();  // all ignored: 0 / 0 = nan, as torch
  return r == Reduction::Sum ? loss.sum() : loss;
}

Tensor cross_entropy_grad(const Tensor& g, const Tensor& x, const Tensor& target, const Tensor& weight,
                          int64_t ignore_index, Reduction r);

/** cross_entropy's input gradient for the loss's gradient g (0-d, or [N] for None): the
 *  backend's kernel as an op of its own, so that backward, grad and a program run the same
 *  kernel (a program calls it back; a file gets its formula). Its own rule is written with
 *  ops, so higher derivatives work. */
Tensor cross_entropy_backward(const Tensor& g, const Tensor& x, const Tensor& target, const Tensor& weight,
                              int64_t ignore_index, Reduction r) {
  graph::OpCall call(kCrossEntropyBackward);
  Tensor dx = empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
  {
    NoGradGuard kernel_views;  // conversions that only feed the kernel: no nodes for them
    backend_for(x.device())
        .cross_entropy_backward(g.to(x.dtype()).contiguous(), x.contiguous(), target.to(DType::Int64).contiguous(),
                                weight.defined() ? weight.contiguous() : Tensor(), ignore_index, r == Reduction::Mean,
                                dx);
  }
  if (call.capturing()) {
    call.set_attrs({{"ignore_index", ignore_index}, {"reduction", std::string(reduction_name(r))}});
    call.set_replay(
        [ignore_index, r](const graph::Tensors& in) {
          return graph::Tensors{cross_entropy_grad(in[0], in[1], in[2], in[3], ignore_index, r)};
        },
        graph::ReplaySizes::None);
  }
  call.finish(
      {&g, &x, &target, &weight}, {&dx},
      {graph::input(g), graph::input(x), graph::input(target),
       weight.defined() ? graph::input(weight) : graph::nothing},
      [ignore_index, r](graph::Saved s, graph::Tensors&& h) {
        // dx = (coef g) (p - one_hot) with p = softmax(x): linear in g; in x, softmax's
        // Jacobian (symmetric) applied to h scaled by each row's coef g.
        const Tensor &g = s[0], &x = s[1], &target = s[2], &weight = s[3];
        auto [safe, coef] = row_coefficients(x, target, weight, ignore_index, r);
        Tensor p = softmax(x, 1);
        Tensor per_row = ((p - one_hot_rows(x, safe)) * h[0]).sum(Dims{1}) * coef;
        Tensor q = h[0] * (coef * g).unsqueeze(1);
        return graph::Tensors{g.dim() == 0 ? per_row.sum() : per_row, p * (q - (q * p).sum(Dims{1}, true)), Tensor(),
                              Tensor()};
      },
      graph::NoRule{});  // forward mode and vmap take cross_entropy_grad's formula instead
  return dx;
}

Tensor cross_entropy_grad(const Tensor& g, const Tensor& x, const Tensor& target, const Tensor& weight,
                          int64_t ignore_index, Reduction r) {
  if (!batching::max_level({&g, &x, &target, &weight}) && !forward::active())
    return cross_entropy_backward(g, x, target, weight, ignore_index, r);
  auto [safe, coef] = row_coefficients(x, target, weight, ignore_index, r);
  return (softmax(x, 1) - one_hot_rows(x, safe)) * (coef * g).unsqueeze(1);
}

Tensor cross_entropy_fused(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                           Reduction r) {
  graph::OpCall call(kCrossEntropy);
  const int64_t n = input.size(0);
  const Options opts{.dtype = input.dtype(), .device = input.device()};
  Tensor loss = empty(r == Reduction::None ? Dims{n} : Dims{}, opts), total = empty({}, opts);
  {
    NoGradGuard kernel_views;  // conversions that only feed the kernels: no nodes for them
    Backend& be = backend_for(input.device());
    Tensor x = input.contiguous(), logp = empty(input.shape(), opts);
    be.softmax(x, true, logp);
    be.nll_loss(logp, target.to(DType::Int64).contiguous(), weight.defined() ? weight.contiguous() : Tensor(),
                ignore_index, loss, total);
  }
  if (r == Reduction::Mean) loss = loss / total;  // all ignored: 0 / 0 = nan, as torch
  if (call.capturing())  // exported as SoftmaxCrossEntropyLoss, which a program runs with this op
    call.set_attrs({{"ignore_index", ignore_index}, {"reduction", std::string(reduction_name(r))}});
  // Only the input takes a gradient: the targets are indices and cross_entropy_fuses leaves
  // weights that require grad to the composed form.
  call.finish(
      {&input, &target, &weight}, {&loss},
      {graph::input(input), graph::input(target), weight.defined() ? graph::input(weight) : graph::nothing},
      [ignore_index, r](graph::Saved s, graph::Tensors&& g) {
        return graph::Tensors{cross_entropy_grad(g[0], s[0], s[1], s[2], ignore_index, r), Tensor(), Tensor()};
      },
      graph::NoRule{});  // forward mode takes the composed form
  return loss;
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction r) {
  if (cross_entropy_fuses(input, target, weight)) return cross_entropy_fused(input, target, weight, ignore_index, r);
  return cross_entropy_formula(input, target, weight, ignore_index, r);
}

Tensor nll_loss_fused(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                      Reduction r) {
  graph::OpCall call(kNllLoss);
  const Shape in_shape = input.shape();
  const int64_t classes = in_shape.back(), n = input.dim() == 2 ? in_shape[0] : 1;
  const Options opts{.dtype = input.dtype(), .device = input.device()};
  Tensor t = target.to(DType::Int64).contiguous().view({n});
  Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  Tensor loss = empty(r == Reduction::None ? Dims{n} : Dims{}, opts), total = empty({}, opts);
  {
    NoGradGuard kernel_view;  // input's view only feeds the kernel: no node for it
    backend_for(input.device()).nll_loss(input.contiguous().view({n, classes}), t, w, ignore_index, loss, total);
  }
  if (r == Reduction::Mean) loss = loss / total;  // all ignored: 0 / 0 = nan, as torch
  if (r == Reduction::None && input.dim() == 1) loss = loss.view({});
  // Only the input takes a gradient: the targets are indices and nll_loss_fuses leaves
  // weights that require grad to the composed form.
  call.finish(
      {&input, &target, &weight}, {&loss}, {graph::input(t), w.defined() ? graph::input(w) : graph::nothing},
      [&] {  // the captures are built only when a node is recorded
        return [total, ignore_index, r, n, classes, in_shape](graph::Saved s, graph::Tensors&& g) {
          const Tensor &t = s[0], &w = s[1];
          const Options opts{.dtype = total.dtype(), .device = total.device()};
          Backend& be = backend_for(total.device());
          Tensor gs = r == Reduction::Mean ? g[0] / total : g[0];
          Tensor dx = empty({n, classes}, opts);
          if (GradMode::is_enabled()) {
            // A graph of the gradient (double backward): unit coefficients times g, recorded.
            be.nll_loss_backward(ones({}, opts), t, w, ignore_index, dx);
            dx = dx * (gs.dim() == 1 ? gs.unsqueeze(1) : gs);
          } else {
            be.nll_loss_backward(gs.contiguous(), t, w, ignore_index, dx);
          }
          return graph::Tensors{dx.view(in_shape), Tensor(), Tensor()};
        };
      },
      graph::NoRule{});  // forward mode takes the composed form
  return loss;
}

}  // namespace ug::ops
