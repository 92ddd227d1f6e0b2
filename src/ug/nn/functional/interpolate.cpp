#include "ug/nn/functional/interpolate.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "ug/core/error.h"
#include "ug/ops/binary.h"

namespace ug::nn::functional {

namespace {

enum class Kind { Nearest, NearestExact, Linear };

/** The mode's kind; the linear modes each need their number of dims. */
Kind kind_of(std::string_view mode, int64_t dims) {
  if (mode == "nearest") return Kind::Nearest;
  if (mode == "nearest-exact") return Kind::NearestExact;
  constexpr std::string_view linear[] = {"linear", "bilinear", "trilinear"};
  for (int64_t d = 3; d <= 5; ++d) {
    if (mode != linear[d - 3]) continue;
    if (dims != d) fail("[interpolate] got ", dims, "D input, but ", mode, " mode needs ", d, "D input");
    return Kind::Linear;
  }
  fail("[interpolate] unsupported mode '", mode,
       "': use 'nearest', 'nearest-exact', 'linear' (3-D input), 'bilinear' (4-D) or 'trilinear' (5-D)");
}

/** `values` (one for every spatial dim, or one each) as one per spatial dim. */
template <class Vec> Vec per_dim(const Vec& values, const Tensor& input, const char* what) {
  const size_t n = static_cast<size_t>(input.dim() - 2);
  if (values.size() == 1) return Vec(n, values[0]);
  if (values.size() != n)
    fail("[interpolate] input and ", what, " must have the same number of spatial dimensions, but got input of shape ",
         input.shape(), " and ", values.size(), " ", what, " values");
  return values;
}

/** The output's spatial size, and the scales torch's kernels read (none where it recomputes them). */
std::pair<Dims, std::vector<std::optional<double>>> output_size(const Tensor& input, const InterpolateOptions& o) {
  const size_t n = static_cast<size_t>(input.dim() - 2);
  if (o.size && o.scale_factor) fail("[interpolate] only one of size or scale_factor should be defined");
  if (!o.size && !o.scale_factor) fail("[interpolate] either size or scale_factor should be defined");
  if (o.size) {
    if (o.recompute_scale_factor.value_or(false))
      fail("[interpolate] recompute_scale_factor is not meaningful with an explicit size.");
    return {per_dim(*o.size, input, "size"), std::vector<std::optional<double>>(n)};
  }
  const std::vector<double> scales = per_dim(*o.scale_factor, input, "scale_factor");
  Dims out;
  std::vector<std::optional<double>> kept;
  for (size_t i = 0; i < n; ++i) {
    const double size = static_cast<double>(input.size(static_cast<int64_t>(i) + 2)) * scales[i];
    if (!(std::abs(size) < 0x1p63))
      fail("[interpolate] scale_factor ", scales[i], " makes an output size that does not fit in int64 (input shape ",
           input.shape(), ")");
    out.push_back(static_cast<int64_t>(size));
    kept.push_back(o.recompute_scale_factor.value_or(false) ? std::nullopt : std::optional<double>(scales[i]));
  }
  return {out, kept};
}

/** torch's compute_scales_value: 1 / the given scale, else input size / output size. */
template <class T> T source_scale(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
}

/** The source index of each output, as torch's CPU kernels compute it for 3-D and 5-D input: in
 *  the opmath type T, floored as a float (floorf), clamped to the input. Its backward kernels,
 *  and its 4-D nearest forward below 128 elements a dim, compute them in float and take
 *  out == in and out == 2 in as a copy and a halving whatever the scale_factor, so torch's
 *  gradient there is not its forward's; unigrad's is the derivative of these indices. */
template <class T> Tensor nearest_indices(bool exact, int64_t in, int64_t out, std::optional<double> scale) {
  Tensor index = empty({out}, {.dtype = DType::Int64});
  int64_t* p = index.data_ptr<int64_t>();
  const T s = source_scale<T>(scale, in, out);
  for (int64_t i = 0; i < out; ++i) {
    const T real = exact ? s * (static_cast<T>(i) + T(0.5)) : s * static_cast<T>(i);
    p[i] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
  }
  return index;
}

/** torch's compute_source_index_and_lambda in its opmath type T: the two source indices of each
 *  output and the second one's weight (as a float64 tensor [out]). */
template <class T>
std::tuple<Tensor, Tensor, Tensor> linear_taps(int64_t in, int64_t out, bool align_corners,
                                               std::optional<double> scale) {
  Tensor i0 = empty({out}, {.dtype = DType::Int64}), i1 = empty({out}, {.dtype = DType::Int64});
  Tensor l1 = empty({out}, {.dtype = DType::Float64});
  int64_t *p0 = i0.data_ptr<int64_t>(), *p1 = i1.data_ptr<int64_t>();
  double* pl = l1.data_ptr<double>();
  const T ratio = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : source_scale<T>(scale, in, out);
  for (int64_t i = 0; i < out; ++i) {
    // torch's kernels are built with FMA contraction: ratio * (i + 0.5) - 0.5 is rounded once.
    T real = align_corners ? ratio * static_cast<T>(i) : std::fma(ratio, static_cast<T>(i) + T(0.5), T(-0.5));
    if (real < T(0)) real = T(0);
    p0[i] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);  // floorf, as torch
    p1[i] = p0[i] + (p0[i] < in - 1 ? 1 : 0);
    pl[i] = std::clamp(real - static_cast<T>(p0[i]), T(0), T(1));
  }
  return {i0, i1, l1};
}

/** x resized along `dim` from in to out elements. */
Tensor resize_dim(const Tensor& x, int64_t dim, Kind kind, int64_t out, bool align_corners,
                  std::optional<double> scale) {
  const int64_t in = x.size(dim);
  const bool f64 = x.dtype() == DType::Float64;  // torch's opmath type: double for double, float otherwise
  if (kind != Kind::Linear) {
    const bool exact = kind == Kind::NearestExact;
    Tensor index = f64 ? nearest_indices<double>(exact, in, out, scale) : nearest_indices<float>(exact, in, out, scale);
    return x.index_select(dim, index.to(x.device()));
  }
  if (out == in) return x;  // torch copies there (weights 1 and 0)
  auto [i0, i1, l1] =
      f64 ? linear_taps<double>(in, out, align_corners, scale) : linear_taps<float>(in, out, align_corners, scale);
  Dims shape(static_cast<size_t>(x.dim() - dim), 1);
  shape[0] = out;
  Tensor w1 = l1.to(x.dtype()).to(x.device()).view(shape);  // rounded to x's dtype, as torch stores it
  return x.index_select(dim, i0.to(x.device())) * (1 - w1) + x.index_select(dim, i1.to(x.device())) * w1;
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateOptions& o) {
  const bool nearest = o.mode == "nearest" || o.mode == "nearest-exact";
  if (nearest && o.align_corners)
    fail(
        "[interpolate] align_corners option can only be set with the interpolating modes: linear | bilinear | "
        "trilinear");
  if (input.dim() < 3 || input.dim() > 5)
    fail("[interpolate] expected a 3-D, 4-D or 5-D input [N, C, *spatial], got shape ", input.shape(), " (",
         input.dtype(), ")");
  const Kind kind = kind_of(o.mode, input.dim());
  if (kind == Kind::Linear && !is_floating(input.dtype()))
    fail<TypeError>("[interpolate] ", o.mode, " mode needs a floating point input, got dtype ", input.dtype());
  auto [size, scales] = output_size(input, o);
  const Dims in(input.shape().begin() + 2, input.shape().end());
  if (std::any_of(in.begin(), in.end(), [](int64_t s) { return s <= 0; }) ||
      std::any_of(size.begin(), size.end(), [](int64_t s) { return s <= 0; }))
    fail("[interpolate] input and output sizes should be greater than 0, but got input spatial size ", in,
         " and output size ", size, " (input shape ", input.shape(), ")");
  // The last dim first: torch's kernels weight the innermost dim's taps first too.
  Tensor y = input;
  for (int64_t d = input.dim() - 1; d >= 2; --d)
    y = resize_dim(y, d, kind, size[d - 2], o.align_corners.value_or(false), scales[d - 2]);
  return y;
}

}  // namespace ug::nn::functional
