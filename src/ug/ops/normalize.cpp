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

const graph::OpDef& row_norm_def(RowNorm kind) {
  return kind == RowNorm::Layer ? kLayerNorm : kind == RowNorm::Group ? kGroupNorm : kInstanceNorm;
}

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

const graph::OpDef kLayerNormBackward("layer_norm_backward");

/** What the rule of layer_norm_backward needs to know besides its operands. */
struct RowNormGrad {
  int64_t cols;
  double eps;
  bool need_w, need_b;
};

/** The gradients (dx, dweight, dbias) of layer_norm_backward's outputs given their cotangents
 *  h (undefined: none), written with ops so that every order works. Row by row, with
 *  v = g w, xhat = (x - mu) rs, dx = rs P(v), P(v) = v - mean(v) - xhat mean(v xhat) (P is
 *  symmetric): dg = w rs P(h_dx) + xhat h_dw + h_db and dw = sum over rows of g rs P(h_dx).
 *  x enters through xhat, whose cotangent u gives rs P(u) (layer_norm's own backward), and
 *  through the rs factor of dx, sum(h_dx dx) / rs, with d rs / dx = -rs^2 xhat / n. */
graph::Tensors row_norm_grad_grad(const graph::Tensors& h, const Tensor& g, const Tensor& x, const Tensor& w,
                                  const RowNormGrad& p) {
  const int64_t n = p.cols;
  Tensor x2 = x.reshape({-1, n}), g2 = g.reshape({-1, n});
  Tensor xc = x2 - x2.mean(Dims{1}, true);
  Tensor rs = ((xc * xc).mean(Dims{1}, true) + p.eps).rsqrt();
  Tensor xhat = xc * rs;
  Tensor wv = w.defined() ? w.reshape({n}) : Tensor();
  Tensor v = w.defined() ? g2 * wv : g2;
  auto project = [&](const Tensor& a) {  // rs P(a)
    return (a - a.mean(Dims{1}, true) - xhat * (a * xhat).mean(Dims{1}, true)) * rs;
  };
  auto add = [](const Tensor& acc, const Tensor& t) { return acc.defined() ? acc + t : t; };
  size_t k = 0;
  const Tensor h_dx = h[k++];
  const Tensor h_dw = p.need_w ? h[k++] : Tensor(), h_db = p.need_b ? h[k++] : Tensor();
  Tensor dg, dx, dw, u;
  if (h_dx.defined()) {
    Tensor a = h_dx.reshape({-1, n});
    Tensor pa = project(a);
    dg = w.defined() ? pa * wv : pa;
    if (w.defined()) dw = (g2 * pa).sum(Dims{0}).view(w.shape());
    Tensor m2 = (v * xhat).mean(Dims{1}, true);
    Tensor s = (a * (v - v.mean(Dims{1}, true) - xhat * m2)).sum(Dims{1}, true);
    u = -(rs * m2) * a - rs * v * (a * xhat).mean(Dims{1}, true);
    dx = -(s * rs * rs / static_cast<double>(n)) * xhat;
  }
  if (h_dw.defined()) {
    Tensor bw = h_dw.reshape({n});
    dg = add(dg, xhat * bw);
    u = add(u, g2 * bw);
  }
  if (h_db.defined()) dg = add(dg, h_db.reshape({n}).expand({g2.size(0), n}));
  if (u.defined()) dx = add(dx, project(u));
  return {dg.defined() ? dg.view(g.shape()) : dg, dx.defined() ? dx.view(x.shape()) : dx, dw};
}

/** layer_norm's (and group and instance norm's) gradients for the output gradient g: the
 *  backend's fused kernel as an op of its own, so that backward, grad and a compiled program
 *  run the same kernel and a trace holds one node. Its operands are g, x (contiguous) and w;
 *  the rows' mean and rstd are the forward kernel's, kept by the forward's rule, or (a
 *  program's call, which has only the operands) computed again by the same kernel, to the same
 *  bits. Returns dx, then dweight and dbias where p asks for them. */
graph::Tensors layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, Tensor mean, Tensor rstd,
                                   const RowNormGrad& p, const Shape& b_shape) {
  graph::OpCall call(kLayerNormBackward);
  const int64_t rows = x.numel() / p.cols;
  const Options o{.dtype = x.dtype(), .device = x.device()};
  Backend& be = backend_for(x.device());
  Tensor dx = empty(x.shape(), o);
  Tensor dw = p.need_w ? empty({p.cols}, o) : Tensor(), db = p.need_b ? empty({p.cols}, o) : Tensor();
  {
    NoGradGuard kernel_views;  // views that only feed the kernel: no nodes for them
    Tensor x2 = x.contiguous().view({rows, p.cols});
    if (!mean.defined()) {  // the normalized rows go to dx, which the backward kernel overwrites
      mean = empty({rows}, o);
      rstd = empty({rows}, o);
      be.layer_norm(x2, Tensor(), Tensor(), p.eps, dx.view({rows, p.cols}), mean, rstd);
    }
    be.layer_norm_backward(g.contiguous().view({rows, p.cols}), x2, mean, rstd, w, dx.view({rows, p.cols}), dw, db);
  }
  if (dw.defined()) dw = dw.view(w.shape());
  if (db.defined()) db = db.view(b_shape);
  if (call.capturing()) {
    // The closure's row length is an attribute (reduce_retracing compares it), b_shape a parameter's.
    call.set_attrs(
        {{"cols", p.cols}, {"epsilon", p.eps}, {"need_weight", int64_t{p.need_w}}, {"need_bias", int64_t{p.need_b}}});
    call.set_replay(
        [p, b_shape](const graph::Tensors& in) {  // a program run under vmap or jvp: the formula
          if (batching::max_level({&in[0], &in[1], &in[2]}) || forward::active()) {
            graph::Tensors d = normalize_rows_backward_ops(in[0], in[1], in[2], p.cols, p.eps, p.need_w, p.need_b);
            graph::Tensors r{d[0]};
            if (p.need_w) r.push_back(d[1]);
            if (p.need_b) r.push_back(d[2].view(b_shape));
            return r;
          }
          return layer_norm_backward(in[0], in[1], in[2], Tensor(), Tensor(), p, b_shape);
        },
        graph::ReplaySizes::None);
  }
  std::vector<const Tensor*> outs{&dx};
  if (dw.defined()) outs.push_back(&dw);
  if (db.defined()) outs.push_back(&db);
  call.finish(
      {&g, &x, &w}, outs, {graph::input(g), graph::input(x), w.defined() ? graph::input(w) : graph::nothing},
      [p](graph::Saved s, graph::Tensors&& h) { return row_norm_grad_grad(h, s[0], s[1], s[2], p); },
      graph::NoRule{});  // forward mode and vmap take the composed form (normalize_rows_ops)
  graph::Tensors r{dx};
  if (dw.defined()) r.push_back(dw);
  if (db.defined()) r.push_back(db);
  return r;
}

/** normalize_rows as one kernel, recorded as one call of kind's op; its rule is the op
 *  layer_norm_backward, or the formula with ops under forward mode and vmap. */
Tensor normalize_rows_fused(RowNorm kind, const Tensor& x, int64_t cols, const Tensor& w, const Tensor& b, double eps) {
  graph::OpCall call(row_norm_def(kind));
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
  // What group_norm's and instance_norm's export rule reads (layer_norm's call is inside its own).
  if (call.capturing()) call.set_attrs({{"cols", cols}, {"epsilon", eps}});
  call.finish(
      {&x, &w, &b}, {&y}, {graph::input(xc), wc.defined() ? graph::input(wc) : graph::nothing},
      [mean, rstd, p = RowNormGrad{cols, eps, wants_grad(w), wants_grad(b)},
       b_shape = b.defined() ? b.shape() : Shape()](graph::Saved s, graph::Tensors&& g) {
        const Tensor &x = s[0], &w = s[1];
        if (batching::max_level({&g[0], &x, &w}) || forward::active())
          return normalize_rows_backward_ops(g[0], x, w, p.cols, p.eps, p.need_w, p.need_b);
        graph::Tensors d = layer_norm_backward(g[0], x, w, mean, rstd, p, b_shape);
        size_t k = 1;
        Tensor dw = p.need_w ? d[k++] : Tensor(), db = p.need_b ? d[k++] : Tensor();
        return graph::Tensors{d[0], dw, db};
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
  const graph::OpDef& def = row_norm_def(kind);
  if (autocast::applies(def)) [[unlikely]]
    return autocast::call(def, normalize_rows, kind, x, cols, w, b, eps);
  const bool fused_dtype = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  if (!fused_dtype || batching::max_level({&x, &w, &b}) || forward::active() || cols == 0)
    return normalize_rows_ops(x, cols, w, b, eps);
  for (const Tensor* t : {&w, &b})
    if (t->defined() && t->dtype() != x.dtype())
      fail<TypeError>("[", def.name(), "] weight and bias must have the input's dtype ", x.dtype(), ", got ",
                      t->dtype());
  return normalize_rows_fused(kind, x, cols, w, b, eps);
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
