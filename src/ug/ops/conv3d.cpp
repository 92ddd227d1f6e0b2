// 3-d convolution and pooling over the 2-d ops: the planes each output plane's depth window
// reads are gathered (index_select, whose gradient adds them back), then the 2-d op runs on
// them. Their derivatives are those of the ops they are made of; the calls here give the
// capture the 3-d op (ONNX's Conv, MaxPool and AveragePool take any rank).
#include "ug/ops/conv3d.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/pool.h"
#include "ug/ops/reduce.h"
#include "ug/ops/window_size.h"

namespace ug {

namespace {

// The names of the 2-d ops' calls: the capture knows them as one op of any rank.
const graph::OpDef kConv("conv", graph::Autocast::Lower), kMaxPool("max_pool"), kAvgPool("avg_pool");

/** A per-dim argument given as one value or three. */
Dims three(const Dims& v, const char* op, const char* name) {
  if (v.size() == 1) return Dims(3, v[0]);
  if (v.size() != 3) fail("[", op, "] expected ", name, " to be a single int or a tuple of 3 ints, got ", name, "=", v);
  return v;
}

/** input as [N, C, D, H, W] (an unbatched one gets N = 1), after torch's rank check. */
Tensor batched(const Tensor& input, const char* op) {
  if (input.dim() != 4 && input.dim() != 5)
    fail("[", op, "] expected 4D (unbatched) or 5D (batched) input to ", op, ", but got input of size: ", input.shape(),
         " (dtype ", input.dtype(), ")");
  return input.dim() == 5 ? input : input.unsqueeze(0);
}

Tensor unbatched_like(const Tensor& out, const Tensor& input) { return input.dim() == 5 ? out : out.squeeze({0}); }

/** The planes each output plane's window reads, [N, C, out, taps, H, W], of x [N, C, D, H, W]:
 *  output plane o reads plane o * stride - before + k * dilation (k < taps), `fill` where that
 *  lies outside x (a mask rather than a padded copy, which a program's gradient could not
 *  rebuild: pad's inner call has no attributes). */
Tensor depth_windows(const Tensor& x, int64_t out, int64_t taps, int64_t stride, int64_t before, int64_t dilation,
                     double fill) {
  const Options ints{.dtype = DType::Int64, .device = x.device()};
  const int64_t depth = x.size(2);
  const Tensor planes =
      ((arange(out, ints) * stride).unsqueeze(1) + arange(taps, ints) * dilation - before).reshape({-1});
  const bool inside = before == 0 && (out - 1) * stride + (taps - 1) * dilation - before < depth;
  const Dims shape{x.size(0), x.size(1), out, taps, x.size(3), x.size(4)};
  if (inside) return x.index_select(2, planes).reshape(shape);
  const Tensor read = x.index_select(2, planes.clamp(Scalar(0), Scalar(depth - 1))).reshape(shape);
  return where(planes.ge(0).logical_and(planes.lt(depth)).view({1, 1, out, taps, 1, 1}), read, Scalar(fill));
}

std::vector<int64_t> as_vector(const Dims& d) { return std::vector<int64_t>(d.begin(), d.end()); }

/** A pooling's checked sizes per dim (torch's rules and words). */
struct PoolArgs {
  Dims kernel, stride, padding, dilation;

  PoolArgs(const Dims& k, const Dims& s, const Dims& p, const Dims& d, const char* op)
      : kernel(three(k, op, "kernel_size")),
        stride(s.empty() ? kernel : three(s, op, "stride")),
        padding(three(p, op, "padding")),
        dilation(three(d, op, "dilation")) {
    for (size_t i = 0; i < 3; ++i) {
      if (kernel[i] <= 0) fail("[", op, "] kernel size should be greater than zero, got kernel_size=", kernel);
      if (stride[i] <= 0) fail("[", op, "] stride should be greater than zero, got stride=", stride);
      if (dilation[i] <= 0) fail("[", op, "] dilation should be greater than zero, got dilation=", dilation);
      if (padding[i] < 0 || padding[i] > kernel[i] / 2)
        fail("[", op, "] pad should be at most half of kernel size, but got pad=", padding, ", kernel_size=", kernel);
    }
  }
  Dims last2(const Dims& v) const { return {v[1], v[2]}; }

  /** The output's depth, after checking that every dim of x [N, C, D, H, W] has a window. */
  int64_t out_depth(const Tensor& x, bool ceil_mode, const char* op) const {
    Dims out;
    for (size_t i = 0; i < 3; ++i)
      out.push_back(
          pool_out_size(x.size(2 + static_cast<int64_t>(i)), kernel[i], stride[i], padding[i], dilation[i], ceil_mode));
    bool empty = false;
    for (int64_t i = 1; i < x.dim(); ++i) empty |= x.size(i) == 0;
    if (empty || out[0] < 1 || out[1] < 1 || out[2] < 1)
      fail("[", op, "] given input size ", x.shape(), ", the calculated output size ", out,
           " is too small (or the input is empty)");
    return out[0];
  }

  graph::Attrs attrs(bool ceil_mode) const {
    std::vector<int64_t> pads = as_vector(padding);
    pads.insert(pads.end(), padding.begin(), padding.end());
    return {{"kernel_shape", as_vector(kernel)},
            {"strides", as_vector(stride)},
            {"pads", pads},
            {"dilations", as_vector(dilation)},
            {"ceil_mode", int64_t{ceil_mode}}};
  }
};

void check_floating(const Tensor& input, const char* op) {
  if (!is_floating(input.dtype()))
    fail<TypeError>("[", op, "] expected a floating-point input, got ", input.dtype(), " of shape ", input.shape());
}

std::pair<Tensor, Tensor> max_pool3d_impl(const Tensor& input, const Dims& kernel_size, const Dims& stride,
                                          const Dims& padding, const Dims& dilation, bool ceil_mode, bool want_idx) {
  const char* op = "max_pool3d";
  graph::OpCall call(kMaxPool);
  const Tensor x = batched(input, op);
  check_floating(input, op);
  const PoolArgs a(kernel_size, stride, padding, dilation, op);
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), w = x.size(4);
  const int64_t depth = a.out_depth(x, ceil_mode, op);
  // Each plane's window first, then the windows across depth: the maximum (and, through the
  // max ops' derivatives, the gradient) goes to the first in (d, h, w) order, as torch's.
  const Tensor flat = x.reshape({n, c * d, h, w});
  Tensor pooled, at;  // at: the position in its plane of each plane window's maximum
  if (want_idx)
    std::tie(pooled, at) = max_pool2d_with_indices(flat, a.last2(a.kernel), a.last2(a.stride), a.last2(a.padding),
                                                   a.last2(a.dilation), ceil_mode);
  else
    pooled = max_pool2d(flat, a.last2(a.kernel), a.last2(a.stride), a.last2(a.padding), a.last2(a.dilation), ceil_mode);
  const int64_t ho = pooled.size(2), wo = pooled.size(3);
  auto [y, tap] = depth_windows(pooled.view({n, c, d, ho, wo}), depth, a.kernel[0], a.stride[0], a.padding[0],
                                a.dilation[0], -std::numeric_limits<double>::infinity())
                      .max(3);
  Tensor indices;
  if (want_idx) {
    const Options ints{.dtype = DType::Int64, .device = x.device()};
    const Tensor plane =
        (arange(depth, ints) * a.stride[0] - a.padding[0]).view({1, 1, depth, 1, 1}) + tap * a.dilation[0];
    indices = unbatched_like(plane * (h * w) + at.view({n, c, d, ho, wo}).gather(2, plane), input);
  }
  y = unbatched_like(y, input);
  if (call.capturing()) call.set_attrs(a.attrs(ceil_mode));
  call.finish({&input}, {&y, &indices});
  return {y, indices};
}

}  // namespace

Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Dims& stride,
              const ConvPadding& padding, const Dims& dilation, int64_t groups) {
  if (autocast::applies(kConv)) [[unlikely]]
    return autocast::call(kConv, conv3d, input, weight, bias, stride, padding, dilation, groups);
  const char* op = "conv3d";
  graph::OpCall call(kConv);
  const Tensor x = batched(input, op);
  const Tensor b = bias ? *bias : Tensor();
  if (weight.dim() != 5)
    fail("[conv3d] expected a 5-d weight [out_channels, in_channels / groups, kd, kh, kw], got weight of shape ",
         weight.shape(), " for input of shape ", input.shape());
  if (weight.dtype() != input.dtype() || (b.defined() && b.dtype() != input.dtype()))
    fail<TypeError>("[conv3d] expected input, weight and bias of one dtype, got input ", input.dtype(), ", weight ",
                    weight.dtype(), b.defined() ? ", bias " : "", b.defined() ? dtype_name(b.dtype()) : "",
                    " (input shape ", input.shape(), ")");
  check_floating(input, op);
  const Dims s = three(stride, op, "stride"), dil = three(dilation, op, "dilation");
  Dims before = padding.mode.empty() ? three(padding.sizes, op, "padding") : Dims(3, 0), extra(3, 0);
  if (!padding.mode.empty() && padding.mode != "same" && padding.mode != "valid")
    fail("[conv3d] invalid padding string '", padding.mode, "': use 'valid', 'same' or sizes");
  for (size_t i = 0; i < 3; ++i) {
    if (s[i] <= 0) fail("[conv3d] non-positive stride is not supported, got stride=", s);
    if (before[i] < 0) fail("[conv3d] negative padding is not supported, got padding=", before);
    if (dil[i] <= 0) fail("[conv3d] dilation should be greater than zero, got dilation=", dil);
    if (padding.mode == "same") {
      if (s[i] != 1) fail("[conv3d] padding='same' is not supported for strided convolutions");
      const int64_t total = dil[i] * (weight.size(2 + static_cast<int64_t>(i)) - 1);
      before[i] = total / 2;
      extra[i] = total - 2 * before[i];  // as torch: the odd one out goes right
    }
  }
  if (groups <= 0) fail("[conv3d] non-positive groups is not supported, got groups=", groups);
  const int64_t out_channels = weight.size(0), group_channels = weight.size(1), taps = weight.size(2);
  if (out_channels % groups != 0)
    fail("[conv3d] given groups=", groups, ", expected weight to be divisible by ", groups,
         " at dimension 0, but got weight of size ", weight.shape(), " instead");
  if (x.size(1) != group_channels * groups)
    fail("[conv3d] given groups=", groups, ", weight of size ", weight.shape(), ", expected input", input.shape(),
         " to have ", group_channels * groups, " channels, but got ", x.size(1), " channels instead");
  if (b.defined() && (b.dim() != 1 || b.size(0) != out_channels))
    fail("[conv3d] given weight of size ", weight.shape(), ", expected bias to be 1-dimensional with ", out_channels,
         " elements, but got bias of size ", b.shape(), " instead");
  Dims padded, kernel;
  for (int64_t i = 0; i < 3; ++i) {
    padded.push_back(x.size(2 + i) + 2 * before[i] + extra[i]);
    kernel.push_back(dil[i] * (weight.size(2 + i) - 1) + 1);
  }
  for (size_t i = 0; i < 3; ++i)
    if (padded[i] < kernel[i])
      fail("[conv3d] calculated padded input size per channel: ", padded, ", (dilated) kernel size: ", kernel,
           "; kernel size can't be greater than actual input size (input shape ", input.shape(), ", weight shape ",
           weight.shape(), ")");
  const int64_t n = x.size(0), depth = (padded[0] - kernel[0]) / s[0] + 1;
  const Tensor right = extra[1] || extra[2] ? pad(x, {0, extra[2], 0, extra[1]}) : x;
  // Channels ordered (group, tap, channel), so each group's taps meet its own weights.
  const Tensor planes = depth_windows(right, depth, taps, s[0], before[0], dil[0], 0.0)
                            .view({n, groups, group_channels, depth, taps, right.size(3), right.size(4)})
                            .permute({0, 3, 1, 4, 2, 5, 6})
                            .reshape({n * depth, groups * taps * group_channels, right.size(3), right.size(4)});
  const Tensor w2 =
      weight.permute({0, 2, 1, 3, 4}).reshape({out_channels, taps * group_channels, weight.size(3), weight.size(4)});
  const Tensor y = conv2d(planes, w2, bias, {s[1], s[2]}, Dims{before[1], before[2]}, {dil[1], dil[2]}, groups);
  Tensor out = unbatched_like(
      y.view({n, depth, out_channels, y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4}).contiguous(), input);
  if (call.capturing()) {
    std::vector<int64_t> pads = as_vector(before);
    for (size_t i = 0; i < 3; ++i) pads.push_back(before[i] + extra[i]);
    call.set_attrs({{"strides", as_vector(s)}, {"pads", pads}, {"dilations", as_vector(dil)}, {"group", groups}});
  }
  // A composite: the ops above record their own derivatives.
  call.finish({&input, &weight, &b}, {&out});
  return out;
}

std::pair<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const Dims& kernel_size, const Dims& stride,
                                                  const Dims& padding, const Dims& dilation, bool ceil_mode) {
  return max_pool3d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, true);
}

Tensor max_pool3d(const Tensor& input, const Dims& kernel_size, const Dims& stride, const Dims& padding,
                  const Dims& dilation, bool ceil_mode) {
  return max_pool3d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, false).first;
}

Tensor avg_pool3d(const Tensor& input, const Dims& kernel_size, const Dims& stride, const Dims& padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool3d";
  graph::OpCall call(kAvgPool);
  const Tensor x = batched(input, op);
  check_floating(input, op);
  const PoolArgs a(kernel_size, stride, padding, {1}, op);
  if (divisor_override && *divisor_override == 0) fail("[avg_pool3d] divisor must be not zero");
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2);
  const int64_t depth = a.out_depth(x, ceil_mode, op);
  const Tensor sums = depth_windows(x, depth, a.kernel[0], a.stride[0], a.padding[0], 1, 0.0).sum({3});
  Tensor y = avg_pool2d(sums.reshape({n, c * depth, x.size(3), x.size(4)}), a.last2(a.kernel), a.last2(a.stride),
                        a.last2(a.padding), ceil_mode, count_include_pad, divisor_override);
  y = y.view({n, c, depth, y.size(2), y.size(3)});
  if (!divisor_override) {  // the 2-d pooling divided by the window's height and width; now its depth
    // As torch: a window ends at the right padding at most and counts the padding it covers.
    const Options ints{.dtype = DType::Int64, .device = x.device()};
    const Tensor start = arange(depth, ints) * a.stride[0] - a.padding[0];
    const Tensor end = clamp(start + a.kernel[0], std::nullopt, Scalar(d + a.padding[0]));
    const Tensor count =
        count_include_pad ? end - start : clamp(end, std::nullopt, Scalar(d)) - clamp(start, Scalar(0), std::nullopt);
    y = y / count.to(y.dtype()).view({1, 1, depth, 1, 1});
  }
  y = unbatched_like(y, input);
  if (call.capturing()) {
    graph::Attrs attrs = a.attrs(ceil_mode);
    attrs.emplace_back("count_include_pad", int64_t{count_include_pad});
    attrs.emplace_back("divisor_override", divisor_override.value_or(0));
    call.set_attrs(std::move(attrs));
  }
  call.finish({&input}, {&y});
  return y;
}

Tensor adaptive_avg_pool3d(const Tensor& input, const Dims& output_size) {
  const char* op = "adaptive_avg_pool3d";
  const Tensor x = batched(input, op);
  check_floating(input, op);
  const Dims size = three(output_size, op, "output_size");
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2);
  // Every plane's (h, w) windows have the same sizes, so the mean over depth of their means is
  // the mean over the whole window.
  const Tensor planes = adaptive_avg_pool2d(x.reshape({n, c * d, x.size(3), x.size(4)}), {size[1], size[2]});
  const Tensor deep = planes.view({n, c, d, size[1] * size[2]}).transpose(2, 3).reshape({n, -1, d});
  const Tensor y = adaptive_avg_pool1d(deep, {size[0]}).view({n, c, size[1], size[2], size[0]});
  return unbatched_like(y.permute({0, 1, 4, 2, 3}).contiguous(), input);
}

std::pair<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, const Dims& output_size) {
  const char* op = "adaptive_max_pool3d";
  const Tensor x = batched(input, op);
  check_floating(input, op);
  const Dims size = three(output_size, op, "output_size");
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), w = x.size(4);
  // The first maximum of each plane's window, then the first plane holding the largest: the
  // first in (d, h, w) order.
  const auto [planes, at] = adaptive_max_pool2d_with_indices(x.reshape({n, c * d, h, w}), {size[1], size[2]});
  const Tensor deep = planes.view({n, c, d, size[1] * size[2]}).transpose(2, 3).reshape({n, -1, d});
  const auto [values, plane] = adaptive_max_pool1d_with_indices(deep, {size[0]});
  const Dims order{0, 1, 4, 2, 3};
  const Tensor y = values.view({n, c, size[1], size[2], size[0]}).permute(order).contiguous();
  const Tensor depth = plane.view({n, c, size[1], size[2], size[0]}).permute(order).contiguous();
  const Tensor indices = depth * (h * w) + gather(at.view({n, c, d, size[1], size[2]}), 2, depth);
  return {unbatched_like(y, input), unbatched_like(indices, input)};
}

Tensor adaptive_max_pool3d(const Tensor& input, const Dims& output_size) {
  return adaptive_max_pool3d_with_indices(input, output_size).first;
}

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        const Dims& stride, const Dims& padding, const Dims& output_padding, int64_t groups,
                        const Dims& dilation) {
  const char* op = "conv_transpose3d";
  const Tensor x = batched(input, op);
  check_floating(input, op);
  if (weight.dim() != 5)
    fail(
        "[conv_transpose3d] expected a 5-d weight [in_channels, out_channels / groups, kd, kh, kw], got weight of "
        "shape ",
        weight.shape(), " for input of shape ", input.shape());
  if (weight.dtype() != input.dtype() || (bias && bias->dtype() != input.dtype()))
    fail<TypeError>("[conv_transpose3d] expected input, weight and bias of one dtype, got input ", input.dtype(),
                    ", weight ", weight.dtype(), bias ? ", bias " : "", bias ? dtype_name(bias->dtype()) : "");
  if (groups <= 0 || weight.size(0) % groups != 0 || x.size(1) != weight.size(0))
    fail("[conv_transpose3d] given groups=", groups, " and weight of size ", weight.shape(), ", expected input ",
         input.shape(), " to have ", weight.size(0), " channels, a multiple of groups");
  const Dims s = three(stride, op, "stride"), p = three(padding, op, "padding"),
             extra = three(output_padding, op, "output_padding"), dil = three(dilation, op, "dilation");
  for (size_t i = 0; i < 3; ++i) {
    if (s[i] <= 0 || dil[i] <= 0 || p[i] < 0)
      fail("[conv_transpose3d] expected positive stride and dilation and non-negative padding, got stride=", s,
           ", padding=", p, ", dilation=", dil);
    if (extra[i] < 0 || (extra[i] >= s[i] && extra[i] >= dil[i]))
      fail(
          "[conv_transpose3d] output padding must be smaller than either stride or dilation, but got "
          "output_padding=",
          extra, ", stride=", s, ", dilation=", dil);
  }
  const int64_t out_channels = weight.size(1) * groups;
  if (bias && (bias->dim() != 1 || bias->size(0) != out_channels))
    fail("[conv_transpose3d] expected a bias of ", out_channels, " elements, got shape ", bias->shape());
  const int64_t n = x.size(0), d = x.size(2), taps = weight.size(2);
  const int64_t out_depth = (d - 1) * s[0] - 2 * p[0] + dil[0] * (taps - 1) + extra[0] + 1;
  if (out_depth <= 0)
    fail("[conv_transpose3d] the output depth ", out_depth, " is not positive (input shape ", input.shape(),
         ", weight shape ", weight.shape(), ")");
  const Tensor planes = x.transpose(1, 2).reshape({n * d, x.size(1), x.size(3), x.size(4)});
  Tensor out;
  for (int64_t k = 0; k < taps; ++k) {
    const Tensor y = conv_transpose2d(planes, weight.select(2, k), std::nullopt, {s[1], s[2]}, {p[1], p[2]},
                                      {extra[1], extra[2]}, groups, {dil[1], dil[2]});
    if (!out.defined()) out = zeros({n, out_depth, out_channels, y.size(2), y.size(3)}, {.dtype = y.dtype()});
    // Input plane i reaches output plane i * stride - padding + k * dilation: those inside.
    const int64_t shift = k * dil[0] - p[0];
    const int64_t first = shift >= 0 ? 0 : (-shift + s[0] - 1) / s[0];
    const int64_t last = std::min(d - 1, out_depth - 1 - shift < 0 ? -1 : (out_depth - 1 - shift) / s[0]);
    if (first > last) continue;
    const Tensor at = arange(first, last + 1, 1, {.dtype = DType::Int64}) * s[0] + shift;
    out = index_add(out, 1, at, y.view({n, d, out_channels, y.size(2), y.size(3)}).narrow(1, first, last - first + 1));
  }
  out = out.transpose(1, 2);
  if (bias) out = out + bias->view({1, -1, 1, 1, 1});
  return unbatched_like(out.contiguous(), input);
}

}  // namespace ug
