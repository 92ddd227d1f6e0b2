// nll_loss on [N, C] / [C] inputs, classification's hot path, as one backend kernel each
// way (nn::functional::nll_loss composes the other cases from ops).
#include "ug/backend/backend.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/nn.h"

namespace ug::ops {

/** Whether nll_loss can run as one kernel: [N, C] or [C] float32/float64 input with targets
 *  of the matching shape, class weights that take no gradient, no vmap or forward mode, and no
 *  capture (its gradient is a kernel call, which a captured graph of ops could not follow). */
bool nll_loss_fuses(const Tensor& input, const Tensor& target, const Tensor& weight) {
  const bool dtype_ok = input.dtype() == DType::Float32 || input.dtype() == DType::Float64;
  const bool target_ok =
      target.dtype() == DType::Int64 || target.dtype() == DType::Int32 || target.dtype() == DType::UInt8;
  const bool shape_ok = input.dim() == 2   ? target.dim() == 1 && target.size(0) == input.size(0)
                        : input.dim() == 1 ? target.dim() == 0
                                           : false;
  const bool weight_ok = !weight.defined() || (weight.dtype() == input.dtype() && !autograd::requires_grad(weight));
  return dtype_ok && target_ok && shape_ok && weight_ok && !batching::max_level({&input, &target, &weight}) &&
         !forward::active() && !graph::detail::current_capture;
}

namespace {
const graph::OpDef kNllLoss("nll_loss", graph::Autocast::Float32);  // cast by nn::functional::nll_loss
}  // namespace

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
