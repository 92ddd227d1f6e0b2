// The op table's normalizations (LRN, InstanceNormalization, GroupNormalization,
// MeanVarianceNormalization) and the activations Mish, Shrink and SwiGLU, each as ONNX's reference
// computes it, composed of ug ops so that gradients flow through them.
#include <algorithm>

#include "ug/core/batching.h"
#include "ug/graph/forward.h"
#include "ug/graph/record.h"
#include "ug/nn/functional.h"
#include "ug/onnx/import_util.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/unary.h"

namespace ug::onnx {

namespace {

namespace F = ug::nn::functional;

/** A per-channel [C] parameter shaped to broadcast over x [N, C, ...]. */
Tensor per_channel(const Tensor& t, const Tensor& x) {
  Dims shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = -1;
  return t.reshape(shape);
}

/** x / (bias + alpha / size * sum of squares over the `size` channels around each) ^ beta, the
 *  window running from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), cut at the edges. */
Outputs lrn_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() < 3) c.fail("the input must be [N, C, spatial...], got ", x.shape());
  const int64_t size = c.attr_int("size");
  if (size < 1 || size > c.max_elements()) c.fail("size must be positive, got ", size);
  const double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75), bias = c.attr_float("bias", 1.0);
  // A window reaching past every channel sums the same as one reaching just past them.
  const int64_t channels = x.size(1), before = std::min((size - 1) / 2, channels);
  const int64_t after = std::min(size - 1 - (size - 1) / 2, channels);
  Dims pads(2 * static_cast<size_t>(x.dim() - 2), 0);  // ug::pad's order: last dim first
  pads.push_back(before);
  pads.push_back(after);
  const Tensor squares = pad(mul(x, x), pads, "constant", 0);
  Tensor sum = squares.narrow(1, 0, channels);
  for (int64_t k = 1; k <= before + after; ++k) sum = add(sum, squares.narrow(1, k, channels));
  return one(div(x, pow(add(mul(sum, alpha / static_cast<double>(size)), bias), beta)));
}

/** Whether t holds `value` in every element and nothing differentiates through it (a constant,
 *  not a parameter: read without an op, so a trace records nothing). */
bool constant_of(const Tensor& t, double value) {
  if (autograd::requires_grad(t) || batching::level(t) || forward::active() || t.device().type != DeviceType::CPU ||
      !t.is_contiguous())
    return false;
  auto all = [&]<class T>(const T* p) { return std::all_of(p, p + t.numel(), [&](T e) { return e == T(value); }); };
  if (t.dtype() == DType::Float32) return all(t.data_ptr<float>());
  if (t.dtype() == DType::Float64) return all(t.data_ptr<double>());
  return false;
}

Outputs instance_norm_op(const OpContext& c) {
  const Tensor &x = c.input(0), &scale = c.input(1), &bias = c.input(2);
  if (x.dim() < 3) c.fail("the input must be [N, C, spatial...], got ", x.shape());
  const Dims channels{x.size(1)};
  if (scale.shape() != channels || bias.shape() != channels)
    c.fail("scale ", scale.shape(), " and B ", bias.shape(), " must be [C] = ", channels);
  // The exporter's group and instance norm (their affine step follows as Mul and Add) have
  // constant scale 1 and bias 0: the normalization alone, as eagerly (two passes fewer).
  const bool bare = constant_of(scale, 1.0) && constant_of(bias, 0.0);
  return one(F::instance_norm(x, {}, {}, bare ? Tensor() : scale, bare ? Tensor() : bias, true, 0.1,
                              c.attr_float("epsilon", 1e-5)));
}

/** GroupNormalization: statistics per sample and group of channels. Opset 18 takes scale and
 *  bias per group, 21 per channel; 21 computes the statistics in float32 (stash_type 1). */
Outputs group_norm_op(const OpContext& c) {
  const Tensor &x = c.input(0), &scale = c.input(1), &bias = c.input(2);
  const int64_t groups = c.attr_int("num_groups");
  if (x.dim() < 3) c.fail("the input must be [N, C, spatial...], got ", x.shape());
  const int64_t channels = x.size(1);
  if (groups < 1 || channels % groups != 0)
    c.fail("num_groups ", groups, " does not divide the ", channels, " channels");
  if (c.attr_int("stash_type", 1) != 1) c.fail("only stash_type=1 (statistics in float32) is supported");
  const int64_t params = c.opset() < 21 ? groups : channels;
  if (scale.shape() != Dims{params} || bias.shape() != Dims{params})
    c.fail("scale ", scale.shape(), " and bias ", bias.shape(), " must be [", params, "] in opset ", c.opset());
  const bool low_precision = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  const Tensor xs = low_precision ? x.to(DType::Float32) : x;
  const Tensor rows = xs.reshape({x.size(0), groups, -1});
  const Tensor mean = rows.mean({2}, true);
  const Tensor normalized = mul(sub(rows, mean), rsqrt(add(rows.var(Dims{2}, 0, true), c.attr_float("epsilon", 1e-5))));
  Tensor y = normalized.reshape(x.shape()).to(x.dtype());
  auto channelwise = [&](const Tensor& t) {  // opset 18's per-group values, one per channel
    return per_channel(params == channels ? t : repeat_interleave(t, channels / groups, 0), x);
  };
  return one(add(mul(y, channelwise(scale)), channelwise(bias)));
}

/** (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes` (default N, H, W), as the op's
 *  function body. */
Outputs mean_variance_normalization_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  Dims axes;
  for (int64_t a : c.attr_ints("axes").value_or(std::vector<int64_t>{0, 2, 3}))
    axes.push_back(norm_axis(c, a, x.dim()));
  const Tensor mean = x.mean(axes, true);
  const Tensor variance = sub(mul(x, x).mean(axes, true), mul(mean, mean));
  return one(div(sub(x, mean), add(sqrt(variance), 1e-9)));
}

Outputs shrink_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const double lambd = c.attr_float("lambd", 0.5), bias = c.attr_float("bias", 0.0);
  const Tensor zero = zeros({}, {.dtype = x.dtype()});
  return one(where(lt(x, -lambd), add(x, bias), where(gt(x, lambd), sub(x, bias), zero)).to(x.dtype()));
}

/** SwiGLU (opset 28): Swish_alpha(A) * B, of inputs of one shape. */
Outputs swiglu_op(const OpContext& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    c.fail("A (", a.shape(), ", ", a.dtype(), ") and B (", b.shape(), ", ", b.dtype(),
           ") must have one shape and dtype");
  return one(mul(mul(a, sigmoid(mul(a, c.attr_float("alpha", 1.0)))), b));
}

}  // namespace

void add_normalization_ops(std::vector<OpSpec>& ops) {
  ops.insert(ops.end(), {
                            {"LRN", lrn_op, 1, 1, 1, 1, {"size"}},
                            {"InstanceNormalization", instance_norm_op, 3, 3, 1, 1, {}},
                            {"GroupNormalization", group_norm_op, 3, 3, 1, 18, {"num_groups"}},
                            {"MeanVarianceNormalization", mean_variance_normalization_op, 1, 1, 1, 1, {}},
                            {"Mish", +[](const OpContext& c) { return one(F::mish(c.input(0))); }, 1, 1, 1, 18, {}},
                            {"Shrink", shrink_op, 1, 1, 1, 1, {}},
                            {"SwiGLU", swiglu_op, 2, 2, 1, 28, {}},
                        });
}

}  // namespace ug::onnx
