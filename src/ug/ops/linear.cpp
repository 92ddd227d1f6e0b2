// linear is the MLP and transformer hot path, so it records one node (not a transpose, a
// product and a broadcast add): the forward is one GEMM into a fresh buffer plus an in-place
// bias add, and the backward is two GEMMs reading the operands in place and one column sum.
#include "ug/ops/nn.h"

#include "ug/graph/grad_mode.h"
#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/linalg.h"
#include "ug/ops/reduce.h"

namespace ug {

namespace {

void check_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (w.dim() != 2 && w.dim() != 1)
    fail("[linear] weight must be [out_features, in_features] (or 1-D), got shape ", w.shape());
  if (x.dim() == 0) fail("[linear] input must have at least 1 dimension, got a 0-d tensor");
  if (x.size(-1) != w.size(-1))
    fail("[linear] input shape ", x.shape(), " does not match weight shape ", w.shape(), " (in_features ", x.size(-1),
         " vs ", w.size(-1), ")");
  if (x.dtype() != w.dtype() || (b.defined() && b.dtype() != x.dtype()))
    fail<TypeError>("[linear] input, weight and bias must share a dtype, got ", x.dtype(), ", ", w.dtype(),
                    b.defined() ? ", " : "", b.defined() ? dtype_name(b.dtype()) : "");
  if (!is_floating(x.dtype())) fail<TypeError>("[linear] expected floating point tensors, got ", x.dtype());
}

/** The composed form, for vmap, forward mode, 1-D weights and biases that are not [out]
 *  (broadcast): every op brings its own rules. */
Tensor linear_composed(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = matmul(x, w.dim() == 2 ? w.t() : w);
  return b.defined() ? y + b : y;
}

const graph::OpDef kLinear("linear", graph::Autocast::Lower);

/** Whether t takes a gradient: the rule computes only the ones some input needs. */
bool wants_grad(const Tensor& t) { return t.defined() && autograd::requires_grad(t); }

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (autocast::applies(kLinear)) [[unlikely]]
    return autocast::call(kLinear, linear, x, w, b);
  graph::OpCall call(kLinear);
  check_linear(x, w, b);
  if (w.dim() == 1 || batching::max_level({&x, &w, &b}) || forward::active() || (b.defined() && b.dim() != 1)) {
    Tensor y = linear_composed(x, w, b);
    call.finish({&x, &w, &b}, {&y});  // the composed ops record the derivatives
    return y;
  }
  const int64_t in = w.size(1), out = w.size(0);
  if (b.defined() && b.size(0) != out)
    fail("[linear] bias shape ", b.shape(), " does not match weight shape ", w.shape());
  Dims out_shape(x.shape().begin(), x.shape().end());
  out_shape.back() = out;
  Tensor y = empty(out_shape, {.dtype = x.dtype(), .device = x.device()});
  {
    NoGradGuard kernel_views;  // the operands' views only feed the kernels: no nodes for them
    Tensor x2 = x.reshape({-1, in});
    Tensor y3 = y.view({1, x2.size(0), out});
    Backend& be = backend_for(x.device());
    be.matmul(x2.unsqueeze(0), w.t().unsqueeze(0), y3);
    if (b.defined()) be.binary(ops::BinaryOp::Add, y3, b.expand(y3.shape()), y3);
  }
  // Only the gradients some input needs, and only what they read: the input of a first layer
  // needs none, so w is not kept for it.
  const bool need_x = wants_grad(x), need_w = wants_grad(w), need_b = wants_grad(b);
  call.finish(
      {&x, &w, &b}, {&y}, {need_w ? graph::input(x) : graph::nothing, need_x ? graph::input(w) : graph::nothing},
      [&] {  // the captures are built only when a node is recorded
        return [need_x, need_w, need_b, x_shape = x.shape(), in](graph::Saved s, graph::Tensors&& g) {
          Tensor g2 = g[0].reshape({-1, g[0].size(-1)});
          // The weight's gradient first: it is x's last reader, which frees x (a GELU's
          // output, 4x the width) before dx is allocated, in a compiled program and eagerly
          // where the graph is not retained.
          Tensor dw = need_w ? mm(g2.t(), s[0].reshape({-1, in})) : Tensor();
          s[0] = Tensor();
          Tensor db = need_b ? g2.sum(Dims{0}) : Tensor();
          Tensor dx = need_x ? mm(g2, s[1]).view(x_shape) : Tensor();
          return graph::Tensors{dx, dw, db};
        };
      },
      graph::NoRule{});  // forward mode takes the composed form
  return y;
}

}  // namespace ug
