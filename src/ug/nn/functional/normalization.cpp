// group_norm and instance_norm normalize the rows of a reshaped x with the fused op
// ops::normalize_rows, as layer_norm (an op, ops/nn.h) does; batch_norm with batch statistics
// runs ops::batch_norm_fused where it applies; rms_norm and the rest of batch_norm are
// composed from ops.
#include "ug/nn/functional/normalization.h"

#include <limits>

#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/conv3d.h"
#include "ug/ops/join.h"
#include "ug/ops/nn.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::nn::functional {

namespace {

const graph::OpDef kBatchNorm("batch_norm", graph::Autocast::Float32);

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

Tensor rms_norm(const Tensor& x, const Dims& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  const char* op = "rms_norm";
  if (!is_floating(x.dtype())) fail<TypeError>("[rms_norm] expected a floating point input, got ", x.dtype());
  ops::check_normalized(x, normalized_shape, weight, {}, op);
  const double e = eps.value_or(x.dtype() == DType::Float64    ? std::numeric_limits<double>::epsilon()
                                : x.dtype() == DType::Float16  ? 0.0009765625
                                : x.dtype() == DType::BFloat16 ? 0.0078125
                                                               : std::numeric_limits<float>::epsilon());
  Dims dims;
  for (int64_t i = 0; i < static_cast<int64_t>(normalized_shape.size()); ++i) dims.push_back(x.dim() - 1 - i);
  Tensor y = x * ((x * x).mean(dims, true) + e).rsqrt();
  return weight.defined() ? y * weight : y;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  if (autocast::applies(kBatchNorm)) [[unlikely]]
    return autocast::call(kBatchNorm, batch_norm, x, running_mean, running_var, weight, bias, training, momentum, eps);
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
  if (count <= 1) fail("[batch_norm] Expected more than 1 value per channel when training, got input size ", x.shape());
  const double unbiased = static_cast<double>(count) / static_cast<double>(count - 1);
  if (ops::batch_norm_fuses(x, weight, bias)) {
    ops::BatchStats s = ops::batch_norm_fused(x, weight, bias, eps);
    update_running(running_mean, s.mean, momentum);
    update_running(running_var, s.var * unbiased, momentum);
    call.finish({&x, &weight, &bias, &running_mean, &running_var}, {&s.y, &running_mean, &running_var});
    return s.y;
  }
  Dims dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor mean = x.mean(dims, true);
  Tensor xc = x - mean;
  Tensor var = (xc * xc).mean(dims, true);
  update_running(running_mean, mean.flatten(), momentum);
  update_running(running_var, var.flatten() * unbiased, momentum);
  Tensor scale = (var + eps).rsqrt();
  if (weight.defined()) scale = scale * per_channel(weight, x);
  Tensor y = xc * scale;
  if (bias.defined()) y = y + per_channel(bias, x);
  if (call.capturing()) call.set_attrs({{"epsilon", eps}, {"training", int64_t{1}}});
  // The running statistics are written in place: outputs too (undefined when not tracked).
  call.finish({&x, &weight, &bias, &running_mean, &running_var}, {&y, &running_mean, &running_var});
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
  // torch's rule: one value per group over the whole batch is refused
  if (x.numel() == num_groups)
    fail("[group_norm] Expected more than 1 value per channel when training, got input size ", x.shape());
  const int64_t rows = n * num_groups;
  Tensor y = ops::normalize_rows(ops::RowNorm::Group, x, rows ? x.numel() / rows : 0, {}, {}, eps);
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
      fail<RuntimeError>(
          "[instance_norm] Expected running_mean and running_var to be defined when use_input_stats is false");
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
  Tensor y = ops::normalize_rows(ops::RowNorm::Instance, x, spatial, {}, {}, eps);
  if (weight.defined()) y = y * per_channel(weight, x);
  return bias.defined() ? y + per_channel(bias, x) : y;
}

Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta, double k) {
  if (input.dim() < 3)
    fail("[local_response_norm] expected 3D or higher dimensionality input, got shape ", input.shape(), " (",
         input.dtype(), ")");
  if (size <= 0) fail("[local_response_norm] size must be positive, got ", size);
  if (input.numel() == 0) return input;
  // The squares as one-channel volumes [N, 1, C, H, rest], padded and averaged over channels.
  const Tensor sq = (input * input).reshape({input.size(0), 1, input.size(1), input.size(2), -1});
  const Tensor padded = pad(sq, {0, 0, 0, 0, size / 2, (size - 1) / 2});
  const Tensor div = avg_pool3d(padded, {size, 1, 1}, {1}).reshape(input.shape());
  return input / (div * alpha + k).pow(beta);
}

}  // namespace ug::nn::functional
