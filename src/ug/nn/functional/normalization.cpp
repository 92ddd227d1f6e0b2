// layer_norm, group_norm and instance_norm all normalize the rows of x seen as [rows, cols]:
// normalize_rows runs the backend's fused kernel and records one node whose rule calls the
// fused backward, or (when a graph of the gradient is asked for) the same formula written
// with ops, so double backward works. batch_norm and rms_norm are composed from ops.
#include "ug/nn/functional/normalization.h"

#include <limits>

#include "ug/graph/grad_mode.h"
#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::nn::functional {

namespace {

const graph::OpDef kLayerNorm("layer_norm"), kBatchNorm("batch_norm"), kGroupNorm("group_norm"),
    kInstanceNorm("instance_norm");

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
  call.finish({&x, &w, &b}, {&y}, {graph::input(xc), wc.defined() ? graph::input(wc) : graph::nothing},
              [mean, rstd, cols, eps, w_shape = w.defined() ? w.shape() : Shape(),
               b_shape = b.defined() ? b.shape() : Shape(), need_w = wants_grad(w),
               need_b = wants_grad(b)](graph::Saved s, graph::Tensors&& g) {
                const Tensor &x = s[0], &w = s[1];
                if (GradMode::is_enabled())  // create_graph: a differentiable gradient
                  return normalize_rows_backward_ops(g[0], x, w, cols, eps, need_w, need_b);
                const int64_t rows = mean.size(0);
                Tensor gc = g[0].contiguous();
                Tensor dx = empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
                Options o{.dtype = x.dtype(), .device = x.device()};
                Tensor dw = need_w ? empty({cols}, o) : Tensor();
                Tensor db = need_b ? empty({cols}, o) : Tensor();
                backend_for(x.device()).layer_norm_backward(gc.view({rows, cols}), x.view({rows, cols}), mean, rstd, w,
                                                            dx.view({rows, cols}), dw, db);
                return graph::Tensors{dx, dw.defined() ? dw.view(w_shape) : dw, db.defined() ? db.view(b_shape) : db};
              },
              graph::NoRule{});  // forward mode takes the composed form
  return y;
}

/** x (any shape) normalized over rows of `cols` consecutive elements, times weight plus bias
 *  (`cols` elements each, any shape, optional). The result has x's shape. The composed form
 *  is not one call: its ops are recorded (and exported) one by one. */
Tensor normalize_rows(const graph::OpDef& def, const Tensor& x, int64_t cols, const Tensor& w, const Tensor& b,
                      double eps) {
  const bool fused_dtype = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  if (!fused_dtype || batching::max_level({&x, &w, &b}) || forward::active() || cols == 0)
    return normalize_rows_ops(x, cols, w, b, eps);
  for (const Tensor* t : {&w, &b})
    if (t->defined() && t->dtype() != x.dtype())
      fail<TypeError>("[", def.name(), "] weight and bias must have the input's dtype ", x.dtype(), ", got ",
                      t->dtype());
  return normalize_rows_fused(def, x, cols, w, b, eps);
}

/** x's trailing dims must be `shape`; returns how many elements they hold. */
int64_t trailing_numel(const Tensor& x, const Dims& shape, const char* op) {
  const int64_t k = static_cast<int64_t>(shape.size());
  bool ok = k <= x.dim();
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == shape[i];
  if (!ok)
    fail("[", op, "] Given normalized_shape=", Shape(shape), ", expected input with shape [*, ", Shape(shape),
         "], but got input of size ", x.shape());
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

void check_param(const Tensor& t, const Dims& shape, const char* op, const char* what) {
  if (t.defined() && t.shape() != Shape(shape))
    fail("[", op, "] expected ", what, " of shape ", Shape(shape), ", got ", t.shape());
}

/** A per-channel [C] tensor viewed [1, C, 1, ...] against x [N, C, ...]. */
Tensor per_channel(const Tensor& t, const Tensor& x) {
  Dims shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = t.numel();
  return t.reshape(shape);
}

void check_channels(const Tensor& t, int64_t channels, const char* op, const char* what) {
  if (t.defined() && t.numel() != channels)
    fail("[", op, "] expected ", what, " with ", channels, " elements (one per channel), got shape ", t.shape());
}

/** running = (1 - momentum) running + momentum value, in place and unrecorded. */
void update_running(const Tensor& running, const Tensor& value, double momentum) {
  if (!running.defined()) return;
  NoGradGuard no_grad;
  Tensor r = running;
  r.copy_(r * (1 - momentum) + value.detach().to(r.dtype()) * momentum);
}

/** The scale and shift form of an affine normalization with known statistics. */
Tensor apply_stats(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& w, const Tensor& b,
                   double eps) {
  Tensor scale = (var + eps).rsqrt();
  if (w.defined()) scale = scale * per_channel(w, x);
  Tensor y = (x - mean) * scale;
  return b.defined() ? y + per_channel(b, x) : y;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Dims& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  graph::OpCall call(kLayerNorm);
  const char* op = "layer_norm";
  if (!is_floating(x.dtype())) fail<TypeError>("[layer_norm] expected a floating point input, got ", x.dtype());
  const int64_t cols = trailing_numel(x, normalized_shape, op);
  check_param(weight, normalized_shape, op, "weight");
  check_param(bias, normalized_shape, op, "bias");
  Tensor y = normalize_rows(kLayerNorm, x, cols, weight, bias, eps);
  if (call.capturing())
    call.set_attrs({{"axis", x.dim() - static_cast<int64_t>(normalized_shape.size())}, {"epsilon", eps}});
  // A composite: normalize_rows records the derivatives.
  call.finish({&x, &weight, &bias}, {&y});
  return y;
}

Tensor rms_norm(const Tensor& x, const Dims& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  const char* op = "rms_norm";
  if (!is_floating(x.dtype())) fail<TypeError>("[rms_norm] expected a floating point input, got ", x.dtype());
  trailing_numel(x, normalized_shape, op);
  check_param(weight, normalized_shape, op, "weight");
  const double e = eps.value_or(x.dtype() == DType::Float64   ? std::numeric_limits<double>::epsilon()
                                : x.dtype() == DType::Float16 ? 0.0009765625
                                : x.dtype() == DType::BFloat16 ? 0.0078125
                                                               : std::numeric_limits<float>::epsilon());
  Dims dims;
  for (int64_t i = 0; i < static_cast<int64_t>(normalized_shape.size()); ++i) dims.push_back(x.dim() - 1 - i);
  Tensor y = x * ((x * x).mean(dims, true) + e).rsqrt();
  return weight.defined() ? y * weight : y;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  graph::OpCall call(kBatchNorm);
  const char* op = "batch_norm";
  if (x.dim() < 2) fail("[batch_norm] expected an input of at least 2 dims [N, C, ...], got shape ", x.shape());
  if (!is_floating(x.dtype())) fail<TypeError>("[batch_norm] expected a floating point input, got ", x.dtype());
  const int64_t channels = x.size(1);
  check_channels(running_mean, channels, op, "running_mean");
  check_channels(running_var, channels, op, "running_var");
  check_channels(weight, channels, op, "weight");
  check_channels(bias, channels, op, "bias");
  if (!training) {
    if (!running_mean.defined() || !running_var.defined())
      fail<RuntimeError>("[batch_norm] running_mean and running_var must be given when training is false");
    Tensor y = apply_stats(x, per_channel(running_mean, x), per_channel(running_var, x), weight, bias, eps);
    // A composite in both modes: the ops record the derivatives.
    if (call.capturing()) call.set_attrs({{"epsilon", eps}, {"training", int64_t{0}}});
    call.finish({&x, &weight, &bias, &running_mean, &running_var}, {&y});
    return y;
  }
  const int64_t count = x.numel() / std::max<int64_t>(channels, 1);
  if (count <= 1)
    fail("[batch_norm] Expected more than 1 value per channel when training, got input size ", x.shape());
  Dims dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor mean = x.mean(dims, true);
  Tensor xc = x - mean;
  Tensor var = (xc * xc).mean(dims, true);
  update_running(running_mean, mean.flatten(), momentum);
  update_running(running_var, var.flatten() * (static_cast<double>(count) / static_cast<double>(count - 1)), momentum);
  Tensor scale = (var + eps).rsqrt();
  if (weight.defined()) scale = scale * per_channel(weight, x);
  Tensor y = xc * scale;
  if (bias.defined()) y = y + per_channel(bias, x);
  if (call.capturing()) call.set_attrs({{"epsilon", eps}, {"training", int64_t{1}}});
  call.finish({&x, &weight, &bias, &running_mean, &running_var}, {&y});
  return y;
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "group_norm";
  if (x.dim() < 2) fail("[group_norm] expected an input of at least 2 dims [N, C, ...], got shape ", x.shape());
  if (!is_floating(x.dtype())) fail<TypeError>("[group_norm] expected a floating point input, got ", x.dtype());
  const int64_t n = x.size(0), channels = x.size(1);
  if (num_groups <= 0 || channels % num_groups != 0)
    fail("[group_norm] Expected number of channels in input to be divisible by num_groups, but got input of shape ",
         x.shape(), " and num_groups=", num_groups);
  check_channels(weight, channels, op, "weight");
  check_channels(bias, channels, op, "bias");
  const int64_t rows = n * num_groups;
  Tensor y = normalize_rows(kGroupNorm, x, rows ? x.numel() / rows : 0, {}, {}, eps);
  if (weight.defined()) y = y * per_channel(weight, x);
  return bias.defined() ? y + per_channel(bias, x) : y;
}

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  const char* op = "instance_norm";
  if (x.dim() < 2) fail("[instance_norm] expected an input of at least 2 dims [N, C, ...], got shape ", x.shape());
  if (!is_floating(x.dtype())) fail<TypeError>("[instance_norm] expected a floating point input, got ", x.dtype());
  const int64_t n = x.size(0), channels = x.size(1);
  check_channels(running_mean, channels, op, "running_mean");
  check_channels(running_var, channels, op, "running_var");
  check_channels(weight, channels, op, "weight");
  check_channels(bias, channels, op, "bias");
  if (!use_input_stats) {
    if (!running_mean.defined() || !running_var.defined())
      fail<RuntimeError>("[instance_norm] Expected running_mean and running_var to be defined when use_input_stats is false");
    return apply_stats(x, per_channel(running_mean, x), per_channel(running_var, x), weight, bias, eps);
  }
  const int64_t spatial = n * channels != 0 ? x.numel() / (n * channels) : 0;
  if (spatial <= 1)
    fail("[instance_norm] Expected more than 1 spatial element when training, got input size ", x.shape());
  if (running_mean.defined() || running_var.defined()) {
    // torch's rule: the running statistics follow the instance statistics averaged over N.
    NoGradGuard no_grad;
    Tensor flat = x.detach().reshape({n, channels, spatial});
    Tensor inst_mean = flat.mean(Dims{2});
    update_running(running_mean, inst_mean.mean(Dims{0}), momentum);
    update_running(running_var, flat.var(Dims{2}, 1).mean(Dims{0}), momentum);
  }
  Tensor y = normalize_rows(kInstanceNorm, x, spatial, {}, {}, eps);
  if (weight.defined()) y = y * per_channel(weight, x);
  return bias.defined() ? y + per_channel(bias, x) : y;
}

}  // namespace ug::nn::functional
