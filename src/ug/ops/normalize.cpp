// layer_norm, group_norm and instance_norm all normalize the rows of x seen as [rows, cols]:
// normalize_rows runs the backend's fused kernel and records one node whose rule calls the
// fused backward, or (when a graph of the gradient is asked for) the same formula written
// with ops, so double backward works. batch_norm_fused does the same for batch_norm with batch
// statistics, which normalizes the channels of x seen as [N, C, S].
#include "ug/backend/backend.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/nn.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug {

namespace ops {

namespace {

// The fused kernel's calls (layer_norm's is hidden inside the call of the op layer_norm).
const graph::OpDef kLayerNorm("layer_norm", graph::Autocast::Float32),
    kGroupNorm("group_norm", graph::Autocast::Float32), kInstanceNorm("instance_norm", graph::Autocast::Float32);

/** Whether t takes a gradient: the rule computes only the ones some input needs. */
bool wants_grad(const Tensor& t) { return t.defined() && autograd::requires_grad(t); }

/** dx, dweight, dbias of row normalization, written with ops (differentiable). */
std::vector<Tensor> normalize_rows_backward_ops(const Tensor& g, const Tensor& x, const Tensor& w, int64_t cols,
                                                double eps, bool need_w, bool need_b) {
  Tensor x2 = x.reshape({-1, cols}), g2 = g.reshape({-1, cols});
  Tensor mu = x2.mean(Dims{1}, true);
  Tensor xc = x2 - mu;
  Tensor rs = ((xc * xc).mean(Dims{1}, true) + eps).rsqrt();
  Tensor xhat = xc * rs;
  Tensor gw = w.defined() ? g2 * w.reshape({cols}) : g2;
  Tensor dx = (gw - gw.mean(Dims{1}, true) - xhat * (gw * xhat).mean(Dims{1}, true)) * rs;
  Tensor dw = need_w ? (g2 * xhat).sum(Dims{0}).view(w.shape()) : Tensor();
  Tensor db = need_b ? g2.sum(Dims{0}) : Tensor();
  return {dx.view(x.shape()), dw, db};
}

/** The composed forward, for vmap, forward mode and 16-bit floats (computed in float32). */
Tensor normalize_rows_ops(const Tensor& x, int64_t cols, const Tensor& w, const Tensor& b, double eps) {
  const bool half = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  Tensor x2 = (half ? x.to(DType::Float32) : x).reshape({-1, cols});
  Tensor mu = x2.mean(Dims{1}, true);
  Tensor xc = x2 - mu;
  Tensor y = xc * ((xc * xc).mean(Dims{1}, true) + eps).rsqrt();
  if (w.defined()) y = y * w.reshape({cols});
  if (b.defined()) y = y + b.reshape({cols});
  return y.reshape(Dims(x.shape().begin(), x.shape().end())).to(x.dtype());
}

/** normalize_rows as one kernel, recorded as one call of `def`. */
Tensor normalize_rows_fused(const graph::OpDef& def, const Tensor& x, int64_t cols, const Tensor& w, const Tensor& b,
                            double eps) {
  graph::OpCall call(def);
  const int64_t rows = x.numel() / cols;
  Tensor xc = x.contiguous();
  Tensor wc = w.defined() ? w.contiguous() : Tensor(), bc = b.defined() ? b.contiguous() : Tensor();
  Tensor y = empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
  Tensor mean = empty({rows}, {.dtype = x.dtype(), .device = x.device()});
  Tensor rstd = empty({rows}, {.dtype = x.dtype(), .device = x.device()});
  {
    NoGradGuard kernel_views;  // views that only feed the kernel: no nodes for them
    backend_for(x.device()).layer_norm(xc.view({rows, cols}), wc, bc, eps, y.view({rows, cols}), mean, rstd);
  }
  call.finish(
      {&x, &w, &b}, {&y}, {graph::input(xc), wc.defined() ? graph::input(wc) : graph::nothing},
      [mean, rstd, cols, eps, w_shape = w.defined() ? w.shape() : Shape(), b_shape = b.defined() ? b.shape() : Shape(),
       need_w = wants_grad(w), need_b = wants_grad(b)](graph::Saved s, graph::Tensors&& g) {
        const Tensor &x = s[0], &w = s[1];
        if (GradMode::is_enabled())  // create_graph: a differentiable gradient
          return normalize_rows_backward_ops(g[0], x, w, cols, eps, need_w, need_b);
        const int64_t rows = mean.size(0);
        Tensor gc = g[0].contiguous();
        Tensor dx = empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
        Options o{.dtype = x.dtype(), .device = x.device()};
        Tensor dw = need_w ? empty({cols}, o) : Tensor();
        Tensor db = need_b ? empty({cols}, o) : Tensor();
        backend_for(x.device())
            .layer_norm_backward(gc.view({rows, cols}), x.view({rows, cols}), mean, rstd, w, dx.view({rows, cols}), dw,
                                 db);
        return graph::Tensors{dx, dw.defined() ? dw.view(w_shape) : dw, db.defined() ? db.view(b_shape) : db};
      },
      graph::NoRule{});  // forward mode takes the composed form
  return y;
}

const graph::OpDef kBatchNorm("batch_norm", graph::Autocast::Float32);

/** dx, dweight, dbias of batch_norm with batch statistics on x3 [N, C, S], written with ops. */
std::vector<Tensor> batch_norm_backward_ops(const Tensor& g3, const Tensor& x3, const Tensor& w, double eps,
                                            bool need_w, bool need_b) {
  const Dims dims{0, 2};
  Tensor mu = x3.mean(dims, true);
  Tensor xc = x3 - mu;
  Tensor rs = ((xc * xc).mean(dims, true) + eps).rsqrt();
  Tensor xhat = xc * rs;
  Tensor gw = w.defined() ? g3 * w.reshape({1, -1, 1}) : g3;
  Tensor dx = (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true)) * rs;
  Tensor dw = need_w ? (g3 * xhat).sum(dims) : Tensor();
  Tensor db = need_b ? g3.sum(dims) : Tensor();
  return {dx, dw, db};
}

}  // namespace

bool batch_norm_fuses(const Tensor& x, const Tensor& w, const Tensor& b) {
  const bool fused_dtype = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  for (const Tensor* t : {&w, &b})
    if (t->defined() && t->dtype() != x.dtype()) return false;
  return fused_dtype && x.dim() >= 2 && x.numel() > 0 && !batching::max_level({&x, &w, &b}) && !forward::active() &&
         !graph::detail::current_capture;
}

BatchStats batch_norm_fused(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  graph::OpCall call(kBatchNorm);
  const int64_t n = x.size(0), channels = x.size(1);
  Tensor xc = x.contiguous();
  Tensor wc = w.defined() ? w.contiguous() : Tensor(), bc = b.defined() ? b.contiguous() : Tensor();
  Options o{.dtype = x.dtype(), .device = x.device()};
  BatchStats r{empty(x.shape(), o), empty({channels}, o), empty({channels}, o)};
  const Dims planes{n, channels, x.numel() / (n * channels)};
  {
    NoGradGuard kernel_views;  // views that only feed the kernel: no nodes for them
    backend_for(x.device()).batch_norm(xc.view(planes), wc, bc, eps, r.y.view(planes), r.mean, r.var);
  }
  call.finish(
      {&x, &w, &b}, {&r.y}, {graph::input(xc), wc.defined() ? graph::input(wc) : graph::nothing},
      [mean = r.mean, var = r.var, planes, eps, w_shape = w.defined() ? w.shape() : Shape(),
       b_shape = b.defined() ? b.shape() : Shape(), need_x = wants_grad(x), need_w = wants_grad(w),
       need_b = wants_grad(b)](graph::Saved s, graph::Tensors&& g) {
        const Tensor &x = s[0], &w = s[1];
        std::vector<Tensor> d;
        if (GradMode::is_enabled()) {  // create_graph: a differentiable gradient
          d = batch_norm_backward_ops(g[0].reshape(planes), x.reshape(planes), w, eps, need_w, need_b);
        } else {
          Options o{.dtype = x.dtype(), .device = x.device()};
          Tensor gc = g[0].contiguous();
          d = {need_x ? empty(x.shape(), o) : Tensor(), need_w ? empty(w_shape, o) : Tensor(),
               need_b ? empty(b_shape, o) : Tensor()};
          backend_for(x.device())
              .batch_norm_backward(gc.view(planes), x.view(planes), mean, var, eps, w,
                                   d[0].defined() ? d[0].view(planes) : Tensor(), d[1], d[2]);
        }
        return graph::Tensors{d[0].defined() ? d[0].view(x.shape()) : d[0], d[1].defined() ? d[1].view(w_shape) : d[1],
                              d[2].defined() ? d[2].view(b_shape) : d[2]};
      },
      graph::NoRule{});  // forward mode takes the composed form
  return r;
}

Tensor normalize_rows(RowNorm kind, const Tensor& x, int64_t cols, const Tensor& w, const Tensor& b, double eps) {
  const graph::OpDef& def = kind == RowNorm::Layer ? kLayerNorm : kind == RowNorm::Group ? kGroupNorm : kInstanceNorm;
  if (autocast::applies(def)) [[unlikely]]
    return autocast::call(def, normalize_rows, kind, x, cols, w, b, eps);
  const bool fused_dtype = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  if (!fused_dtype || batching::max_level({&x, &w, &b}) || forward::active() || cols == 0)
    return normalize_rows_ops(x, cols, w, b, eps);
  for (const Tensor* t : {&w, &b})
    if (t->defined() && t->dtype() != x.dtype())
      fail<TypeError>("[", def.name(), "] weight and bias must have the input's dtype ", x.dtype(), ", got ",
                      t->dtype());
  return normalize_rows_fused(def, x, cols, w, b, eps);
}

int64_t check_normalized(const Tensor& x, const Dims& shape, const Tensor& weight, const Tensor& bias, const char* op) {
  const int64_t k = static_cast<int64_t>(shape.size());
  bool ok = k <= x.dim();
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == shape[i];
  if (!ok)
    fail("[", op, "] Given normalized_shape=", Shape(shape), ", expected input with shape [*, ", Shape(shape),
         "], but got input of size ", x.shape());
  for (const auto& [t, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
    if (t->defined() && t->shape() != Shape(shape))
      fail("[", op, "] expected ", what, " of shape ", Shape(shape), ", got ", t->shape());
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

}  // namespace ops

Tensor layer_norm(const Tensor& x, const Dims& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  if (autocast::applies(ops::kLayerNorm)) [[unlikely]]
    return autocast::call(ops::kLayerNorm, layer_norm, x, normalized_shape, weight, bias, eps);
  graph::OpCall call(ops::kLayerNorm);
  const char* op = "layer_norm";
  if (!is_floating(x.dtype())) fail<TypeError>("[layer_norm] expected a floating point input, got ", x.dtype());
  const int64_t cols = ops::check_normalized(x, normalized_shape, weight, bias, op);
  Tensor y = ops::normalize_rows(ops::RowNorm::Layer, x, cols, weight, bias, eps);
  if (call.capturing())
    call.set_attrs({{"axis", x.dim() - static_cast<int64_t>(normalized_shape.size())}, {"epsilon", eps}});
  // A composite: normalize_rows records the derivatives.
  call.finish({&x, &weight, &bias}, {&y});
  return y;
}

}  // namespace ug
