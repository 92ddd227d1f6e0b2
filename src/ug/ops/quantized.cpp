// Dynamic quantization, composed of elementwise ops around one integer GEMM
// (Backend::matmul_u8s8). The choice of scale and zero point and the rounding follow fbgemm's
// (torch's x86 engine): x * (1 / scale) in float32, rounded half to even.
#include "ug/ops/quantized.h"

#include <algorithm>
#include <cmath>

#include "ug/backend/backend.h"
#include "ug/core/batching.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug {

namespace {

const graph::OpDef kQuantizedLinearDynamic("quantized_linear_dynamic");

std::pair<int64_t, int64_t> int8_range(DType dtype, const char* op) {
  if (dtype == DType::UInt8) return {0, 255};
  if (dtype == DType::Int8) return {-128, 127};
  fail<TypeError>("[", op, "] dtype must be uint8 (quint8) or int8 (qint8), got ", dtype);
}

/** scales / zero points as [1, .., n, .., 1] along axis of x, checked. */
Tensor along(const Tensor& v, const Tensor& x, int64_t axis, const char* op, const char* what) {
  if (v.dim() != 1 || v.size(0) != x.size(axis))
    fail("[", op, "] ", what, " must be 1-D with one value per index of axis ", axis, " (", x.size(axis),
         "), got shape ", v.shape());
  Dims dims(static_cast<size_t>(x.dim()), 1);
  dims[static_cast<size_t>(axis)] = v.size(0);
  return v.reshape(dims);
}

/** clamp(round(x * inv_scale) + zero_point) as dtype; inv_scale and zero_point broadcast. */
template <class S, class Z>
Tensor quantize_with(const Tensor& x, const S& inv_scale, const Z& zero_point, DType dtype, const char* op) {
  if (!is_floating(x.dtype())) fail<TypeError>("[", op, "] expected a floating point input, got ", x.dtype());
  const auto [lo, hi] = int8_range(dtype, op);
  Tensor q = round(x.to(DType::Float32) * inv_scale) + zero_point;
  return q.clamp(Scalar(lo), Scalar(hi)).to(dtype);
}

void check_quantized(const Tensor& q, const char* op) {
  if (q.dtype() != DType::UInt8 && q.dtype() != DType::Int8)
    fail<TypeError>("[", op, "] expected uint8 or int8 integers, got ", q.dtype());
}

}  // namespace

QParams choose_qparams(double lo, double hi, int64_t qmin, int64_t qmax) {
  if (lo > hi) fail("[choose_qparams] min ", lo, " is greater than max ", hi);
  auto fmin = static_cast<float>(std::min(lo, 0.0)), fmax = static_cast<float>(std::max(hi, 0.0));
  double scale = static_cast<float>((double{fmax} - fmin) / static_cast<double>(qmax - qmin));
  if (scale == 0 || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  constexpr float kSmallScale = 6.1e-5f;  // fbgemm's cut-off: smaller scales widen the range
  if (scale < kSmallScale) {
    const double amplifier = kSmallScale / scale;
    scale = kSmallScale;
    if (fmin == 0) fmax = static_cast<float>(scale * static_cast<double>(qmax - qmin));
    else if (fmax == 0) fmin = static_cast<float>(-scale * static_cast<double>(qmax - qmin));
    else {
      fmin = static_cast<float>(fmin * amplifier);
      fmax = static_cast<float>(fmax * amplifier);
    }
  }
  const double from_min = static_cast<double>(qmin) - fmin / scale, from_max = static_cast<double>(qmax) - fmax / scale;
  const double err_min = std::abs(static_cast<double>(qmin)) + std::abs(fmin / scale);
  const double err_max = std::abs(static_cast<double>(qmax)) + std::abs(fmax / scale);
  const double initial = err_min < err_max ? from_min : from_max;
  const int64_t zp = initial < static_cast<double>(qmin)   ? qmin
                     : initial > static_cast<double>(qmax) ? qmax
                                                           : static_cast<int64_t>(std::nearbyint(initial));
  return {scale, zp};
}

Tensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype) {
  if (!(scale > 0) || !std::isfinite(scale)) fail("[quantize_per_tensor] scale must be positive, got ", scale);
  const auto [lo, hi] = int8_range(dtype, "quantize_per_tensor");
  if (zero_point < lo || zero_point > hi)
    fail("[quantize_per_tensor] zero_point ", zero_point, " is outside ", dtype, "'s range [", lo, ", ", hi, "]");
  const float inv = 1.0f / static_cast<float>(scale);
  return quantize_with(x, Scalar(inv), Scalar(zero_point), dtype, "quantize_per_tensor");
}

Tensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                            DType dtype) {
  const char* op = "quantize_per_channel";
  if (x.dim() == 0) fail("[", op, "] expected an input with at least one dim, got a scalar");
  const int64_t a = wrap_dim(axis, x.dim(), op);
  Tensor inv = 1.0 / along(scales, x, a, op, "scales").to(DType::Float32);
  return quantize_with(x, inv, along(zero_points, x, a, op, "zero_points").to(DType::Float32), dtype, op);
}

Tensor dequantize(const Tensor& q, double scale, int64_t zero_point) {
  check_quantized(q, "dequantize");
  return (q.to(DType::Float32) - Scalar(zero_point)) * Scalar(static_cast<float>(scale));
}

Tensor dequantize(const Tensor& q, const Tensor& scales, const Tensor& zero_points, int64_t axis) {
  const char* op = "dequantize";
  check_quantized(q, op);
  if (q.dim() == 0) fail("[", op, "] per-channel integers need at least one dim, got a scalar");
  const int64_t a = wrap_dim(axis, q.dim(), op);
  return (q.to(DType::Float32) - along(zero_points, q, a, op, "zero_points").to(DType::Float32)) *
         along(scales, q, a, op, "scales").to(DType::Float32);
}

Tensor matmul_u8s8(const Tensor& a, const Tensor& b, int64_t a_zero_point) {
  if (a.dtype() != DType::UInt8 || b.dtype() != DType::Int8 || a.dim() != 2 || b.dim() != 2 || a.size(1) != b.size(1))
    fail<TypeError>("[matmul_u8s8] expected uint8 [M, K] and int8 [N, K], got ", a.dtype(), " ", a.shape(), " and ",
                    b.dtype(), " ", b.shape());
  Tensor out = empty({a.size(0), b.size(0)}, {.dtype = DType::Int32, .device = a.device()});
  if (a_zero_point < 0 || a_zero_point > 255)
    fail("[matmul_u8s8] a_zero_point must be in [0, 255], got ", a_zero_point);
  backend_for(a.device()).matmul_u8s8(a.contiguous(), a_zero_point, b.contiguous(), out);
  return out;
}

Tensor quantized_linear_dynamic(const Tensor& x, const Tensor& weight, const Tensor& scale, const Tensor& zero_point,
                                const Tensor& bias, bool reduce_range, const Tensor& packed) {
  const char* op = "quantized_linear_dynamic";
  if (!is_floating(x.dtype())) fail<TypeError>("[", op, "] expected a floating point input, got ", x.dtype());
  if (weight.dtype() != DType::Int8 || weight.dim() != 2)
    fail<TypeError>("[", op, "] weight must be int8 [out_features, in_features], got ", weight.dtype(), " ",
                    weight.shape());
  const int64_t in = weight.size(1), out = weight.size(0);
  if (x.dim() == 0 || x.size(-1) != in)
    fail("[", op, "] input shape ", x.shape(), " does not match weight shape ", weight.shape());
  if (!is_floating(scale.dtype()) || (scale.numel() != 1 && scale.numel() != out) ||
      zero_point.numel() != scale.numel() || !is_integral(zero_point.dtype()))
    fail("[", op, "] scale (floating) and zero_point (integer) must be scalars or hold one value per output (", out,
         "), got ", scale.dtype(), " ", scale.shape(), " and ", zero_point.dtype(), " ", zero_point.shape());
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out || !is_floating(bias.dtype())))
    fail("[", op, "] bias must be floating [", out, "], got ", bias.dtype(), " ", bias.shape());
  if (batching::max_level({&x, &weight}))
    fail("[", op, "] does not run under vmap: the input's scale is chosen once per call, over the whole batch");
  graph::OpCall call(kQuantizedLinearDynamic);
  Tensor y;
  {
    NoGradGuard integers;  // no derivative: the op's steps record nothing
    Tensor x2 = x.reshape({-1, in}).to(DType::Float32).contiguous();
    auto [lo, hi] = backend_for(x.device()).float_range(x2);
    if (!(lo <= hi)) lo = hi = 0;  // no values, or only NaNs
    const QParams qp = choose_qparams(lo, hi, 0, reduce_range ? 127 : 255);
    // One pass to uint8 (quantize_per_tensor's rounding, without its chain of ops).
    Tensor xq = empty(x2.shape(), {.dtype = DType::UInt8, .device = x2.device()});
    backend_for(x.device()).quantize_u8(x2, 1.0f / static_cast<float>(qp.scale), qp.zero_point, xq);
    // fbgemm's epilogue: float(sum) * float(x_scale * w_scale) + bias (per tensor, the scalar
    // product without the ops a one-element tensor would take).
    const Tensor multiplier = scale.numel() == 1
                                  ? full({out}, Scalar(static_cast<float>(scale.item<double>() * qp.scale)),
                                         {.dtype = DType::Float32, .device = x.device()})
                                  : (scale.reshape({-1}).to(DType::Float64) * qp.scale).to(DType::Float32).contiguous();
    const Tensor wzp = zero_point.reshape({-1}).to(DType::Int32);
    const Tensor& b = packed.defined() ? packed : weight.contiguous();
    if (wzp.abs().amax().item<int64_t>() == 0) {
      // The usual case (symmetric weights): the epilogue runs in the GEMM's kernel.
      y = empty({xq.size(0), out}, {.dtype = DType::Float32, .device = x.device()});
      backend_for(x.device())
          .linear_u8s8(xq, qp.zero_point, b, multiplier,
                       bias.defined() ? bias.to(DType::Float32).contiguous() : Tensor(), y);
    } else {
      // sum_k (xq - zx)(w - zw) = sum_k (xq - zx) w - zw (sum_k xq - K zx), in int32.
      Tensor acc = empty({xq.size(0), out}, {.dtype = DType::Int32, .device = x.device()});
      backend_for(x.device()).matmul_u8s8(xq, qp.zero_point, b, acc);
      acc = acc - (xq.sum(Dims{1}, true, DType::Int32) - Scalar(in * qp.zero_point)) * wzp;
      y = acc.to(DType::Float32) * multiplier;
      if (bias.defined()) y = y + bias.to(DType::Float32);
    }
    Dims shape(x.shape().begin(), x.shape().end());
    shape.back() = out;
    y = y.reshape(shape).to(x.dtype());
  }
  if (call.capturing()) {
    call.set_attrs({{"reduce_range", int64_t{reduce_range}}});
    call.set_replay(
        [reduce_range](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{quantized_linear_dynamic(in[0], in[1], in[2], in[3], in[4], reduce_range)};
        },
        graph::ReplaySizes::None);
  }
  call.finish({&x, &weight, &scale, &zero_point, &bias}, {&y});
  return y;
}

Tensor pack_quantized_weight(const Tensor& weight) {
  if (weight.dtype() != DType::Int8 || weight.dim() != 2)
    fail<TypeError>("[pack_quantized_weight] weight must be int8 [out_features, in_features], got ", weight.dtype(),
                    " ", weight.shape());
  return backend_for(weight.device()).pack_u8s8(weight.contiguous());
}

}  // namespace ug
