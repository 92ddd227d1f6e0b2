// mse_loss's mean or sum as one op: one pass over the input and the target that makes neither
// their difference nor its square (a regression step's peak is often at its loss, where both
// would sit beside the activations kept for the backward).
#include "ug/backend/backend.h"
#include "ug/graph/forward.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/nn.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::ops {

namespace {

const graph::OpDef kMseLoss("mse_loss", graph::Autocast::Float32);  // cast by nn::functional::mse_loss

/** Input and target of one shape and one float32/float64 dtype on one device, no vmap or
 *  forward mode: the kernel's case. Others (broadcasting, 16-bit, promotion) are composed. */
bool fuses(const Tensor& input, const Tensor& target) {
  const bool dtype_ok = input.dtype() == DType::Float32 || input.dtype() == DType::Float64;
  return dtype_ok && target.dtype() == input.dtype() && target.shape() == input.shape() &&
         target.device() == input.device() && !batching::max_level({&input, &target}) && !forward::active();
}

Tensor composed(const Tensor& input, const Tensor& target, Reduction r) {
  const Tensor squares = (input - target).square();
  return r == Reduction::Mean ? squares.mean() : squares.sum();
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction r) {
  if (!fuses(input, target)) return composed(input, target, r);
  graph::OpCall call(kMseLoss);
  // An empty mean is 0 times infinity: nan, as torch's.
  const double scale = r == Reduction::Mean ? 1.0 / static_cast<double>(input.numel()) : 1.0;
  Tensor loss = empty({}, {.dtype = input.dtype(), .device = input.device()});
  {
    NoGradGuard kernel_views;  // copies that only feed the kernel: no nodes for them
    backend_for(input.device()).squared_error(input.contiguous(), target.contiguous(), scale, loss);
  }
  if (call.capturing()) call.set_attrs({{"reduction", std::string(r == Reduction::Mean ? "mean" : "sum")}});
  const bool input_grad = autograd::requires_grad(input), target_grad = autograd::requires_grad(target);
  // The gradient 2 scale (input - target) g, written into the difference's buffer (the one
  // tensor of the input's size it makes); with ops, so that it differentiates again.
  call.finish(
      {&input, &target}, {&loss}, {graph::input(input), graph::input(target)},
      [scale, input_grad, target_grad](graph::Saved s, graph::Tensors&& g) {
        Tensor d = (s[0] - s[1]).mul_(g[0] * (2 * scale));
        return graph::Tensors{input_grad ? d : Tensor(), target_grad ? (input_grad ? -d : d.neg_()) : Tensor()};
      },
      graph::NoRule{});  // forward mode takes the composed form
  return loss;
}

}  // namespace ug::ops
