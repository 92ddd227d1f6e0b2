#include "ug/nn/functional/interpolate.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "ug/core/error.h"
#include "ug/graph/size_reads.h"
#include "ug/ops/binary.h"
#include "ug/ops/pool.h"

namespace ug::nn::functional {

namespace {

enum class Kind { Nearest, NearestExact, Linear, Cubic, Area };

/** The mode's kind; the linear and cubic modes each need their number of dims. */
Kind kind_of(std::string_view mode, int64_t dims) {
  if (mode == "nearest") return Kind::Nearest;
  if (mode == "nearest-exact") return Kind::NearestExact;
  if (mode == "area") return Kind::Area;
  constexpr std::pair<std::string_view, int64_t> fixed[] = {
      {"linear", 3}, {"bilinear", 4}, {"bicubic", 4}, {"trilinear", 5}};
  for (const auto& [name, d] : fixed) {
    if (mode != name) continue;
    if (dims != d) fail("[interpolate] got ", dims, "D input, but ", mode, " mode needs ", d, "D input");
    return name == "bicubic" ? Kind::Cubic : Kind::Linear;
  }
  fail("[interpolate] unsupported mode '", mode,
       "': use 'nearest', 'nearest-exact', 'area', 'linear' (3-D input), 'bilinear' or 'bicubic' (4-D) or "
       "'trilinear' (5-D)");
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
  // The taps and indices made from the input's sizes are constants of a recorded graph.
  for (int64_t d = 2; d < input.dim(); ++d) graph::note_size_read("interpolate", input.size(d));
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

/** torch's area_pixel_compute_source_index in its opmath type T for each output: where output i
 *  samples the input, in input pixels. Linear taps clamp it at 0; cubic ones do not. */
template <class T>
std::vector<T> source_positions(int64_t in, int64_t out, bool align_corners, bool cubic, std::optional<double> scale) {
  const T ratio = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : source_scale<T>(scale, in, out);
  std::vector<T> real(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    // torch's kernels are built with FMA contraction: ratio * (i + 0.5) - 0.5 is rounded once.
    T r = align_corners ? ratio * static_cast<T>(i) : std::fma(ratio, static_cast<T>(i) + T(0.5), T(-0.5));
    real[static_cast<size_t>(i)] = !cubic && r < T(0) ? T(0) : r;
  }
  return real;
}

/** torch's guard_index_and_lambda: the input pixel at or before `real` (floorf, as torch), and
 *  how far past it `real` lies, in [0, 1]. */
template <class T> std::pair<int64_t, T> index_and_lambda(T real, int64_t in) {
  const int64_t index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
  return {index, std::clamp(real - static_cast<T>(index), T(0), T(1))};
}

/** Each output's source indices and their weights along one dim: taps[k] and weights[k] ([out],
 *  the weights in float64 from the opmath type T) for the k-th tap. */
struct Taps {
  std::vector<Tensor> index, weight;
};

Taps make_taps(int64_t out, size_t count) {
  Taps t;
  for (size_t k = 0; k < count; ++k) {
    t.index.push_back(empty({out}, {.dtype = DType::Int64}));
    t.weight.push_back(empty({out}, {.dtype = DType::Float64}));
  }
  return t;
}

/** The two taps of linear interpolation (torch's compute_source_index_and_lambda). */
template <class T> Taps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  const std::vector<T> real = source_positions<T>(in, out, align_corners, false, scale);
  Taps t = make_taps(out, 2);
  for (int64_t i = 0; i < out; ++i) {
    const auto [i0, l1] = index_and_lambda(real[static_cast<size_t>(i)], in);
    t.index[0].data_ptr<int64_t>()[i] = i0;
    t.index[1].data_ptr<int64_t>()[i] = i0 + (i0 < in - 1 ? 1 : 0);
    t.weight[0].data_ptr<double>()[i] = static_cast<double>(T(1) - l1);
    t.weight[1].data_ptr<double>()[i] = static_cast<double>(l1);
  }
  return t;
}

/** The four taps of bicubic interpolation: Keys' cubic convolution with A = -0.75 (torch's
 *  get_cubic_upsample_coefficients), the pixels at index - 1 .. index + 2 clamped to the input. */
template <class T> Taps cubic_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  constexpr T A = T(-0.75);
  auto near = [](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  const std::vector<T> real = source_positions<T>(in, out, align_corners, true, scale);
  Taps t = make_taps(out, 4);
  for (int64_t i = 0; i < out; ++i) {
    const auto [index, l] = index_and_lambda(real[static_cast<size_t>(i)], in);
    const T w[4] = {far(l + 1), near(l), near(1 - l), far(2 - l)};
    for (int64_t k = 0; k < 4; ++k) {
      t.index[static_cast<size_t>(k)].data_ptr<int64_t>()[i] = std::clamp<int64_t>(index - 1 + k, 0, in - 1);
      t.weight[static_cast<size_t>(k)].data_ptr<double>()[i] = static_cast<double>(w[k]);
    }
  }
  return t;
}

/** torch's antialiased taps (_compute_indices_min_size_weights_aa): each output averages the
 *  inputs under a filter stretched by the downscale factor (a triangle for bilinear, the cubic
 *  with A = -0.5 for bicubic, as PIL), its window cut at the borders and its weights
 *  normalised to sum to 1. Every output gets the widest window's count of taps, the unused
 *  ones weighing 0. */
template <class T>
Taps antialias_taps(int64_t in, int64_t out, bool cubic, bool align_corners, std::optional<double> scale) {
  constexpr T A = T(-0.5);
  auto filter = [cubic](T x) {
    x = std::abs(x);
    if (!cubic) return x < 1 ? 1 - x : T(0);
    if (x < 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
    return x < 2 ? ((A * x - 5 * A) * x + 8 * A) * x - 4 * A : T(0);
  };
  const T s = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                            : source_scale<T>(scale, in, out);
  const T half = cubic ? T(2) : T(1), support = s >= 1 ? half * s : half, invscale = s >= 1 ? 1 / s : T(1);
  const int64_t taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  Taps t = make_taps(out, static_cast<size_t>(taps));
  std::vector<T> w(static_cast<size_t>(taps));
  for (int64_t i = 0; i < out; ++i) {
    const T center = s * (static_cast<T>(i) + T(0.5));
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + T(0.5)), 0);
    const int64_t size =
        std::clamp<int64_t>(std::min(static_cast<int64_t>(center + support + T(0.5)), in) - lo, 0, taps);
    T total = 0;
    for (int64_t j = 0; j < size; ++j)
      total += w[static_cast<size_t>(j)] = filter((static_cast<T>(j + lo) - center + T(0.5)) * invscale);
    for (int64_t j = 0; j < taps; ++j) {
      const T weight = j < size && total != 0 ? w[static_cast<size_t>(j)] / total : T(0);
      t.index[static_cast<size_t>(j)].data_ptr<int64_t>()[i] = j < size ? lo + j : std::min(lo, in - 1);
      t.weight[static_cast<size_t>(j)].data_ptr<double>()[i] = static_cast<double>(weight);
    }
  }
  return t;
}

/** x resized along `dim` from in to out elements. */
Tensor resize_dim(const Tensor& x, int64_t dim, Kind kind, int64_t out, bool align_corners, bool antialias,
                  std::optional<double> scale) {
  const int64_t in = x.size(dim);
  const bool f64 = x.dtype() == DType::Float64;  // torch's opmath type: double for double, float otherwise
  if (kind == Kind::Nearest || kind == Kind::NearestExact) {
    const bool exact = kind == Kind::NearestExact;
    Tensor index = f64 ? nearest_indices<double>(exact, in, out, scale) : nearest_indices<float>(exact, in, out, scale);
    return x.index_select(dim, index.to(x.device()));
  }
  if (kind == Kind::Linear && out == in && !antialias) return x;  // torch copies there (weights 1 and 0)
  const bool cubic = kind == Kind::Cubic;
  const Taps taps = antialias ? (f64 ? antialias_taps<double>(in, out, cubic, align_corners, scale)
                                     : antialias_taps<float>(in, out, cubic, align_corners, scale))
                    : !cubic  ? (f64 ? linear_taps<double>(in, out, align_corners, scale)
                                     : linear_taps<float>(in, out, align_corners, scale))
                              : (f64 ? cubic_taps<double>(in, out, align_corners, scale)
                                     : cubic_taps<float>(in, out, align_corners, scale));
  Dims shape(static_cast<size_t>(x.dim() - dim), 1);
  shape[0] = out;
  Tensor y;
  for (size_t k = 0; k < taps.index.size(); ++k) {
    // The weight rounded to x's dtype, as torch's kernels hold it; linear's first weight is
    // 1 - the second in x's dtype, as torch computes it.
    Tensor w = taps.weight[k].to(x.dtype()).to(x.device()).view(shape);
    if (kind == Kind::Linear && !antialias && k == 0) w = 1 - taps.weight[1].to(x.dtype()).to(x.device()).view(shape);
    Tensor term = x.index_select(dim, taps.index[k].to(x.device())) * w;
    y = y.defined() ? y + term : term;
  }
  return y;
}

/** torch's area mode: adaptive average pooling to the output size (each output the mean of the
 *  input pixels its bin covers); for 5-D input along depth and then over each plane, the bins'
 *  means being separable. */
Tensor area(const Tensor& input, const Dims& size) {
  if (input.dim() == 3) return ::ug::adaptive_avg_pool1d(input, size);
  if (input.dim() == 4) return ::ug::adaptive_avg_pool2d(input, size);
  const Shape& s = input.shape();
  Tensor depth_last = input.movedim(2, -1);
  Tensor depth = ::ug::adaptive_avg_pool1d(depth_last.reshape({s[0] * s[1] * s[3] * s[4], 1, s[2]}), {size[0]})
                     .reshape({s[0], s[1], s[3], s[4], size[0]})
                     .movedim(-1, 2);
  return ::ug::adaptive_avg_pool2d(depth.reshape({s[0], s[1] * size[0], s[3], s[4]}), {size[1], size[2]})
      .reshape({s[0], s[1], size[0], size[1], size[2]});
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateOptions& o) {
  const bool not_interpolating = o.mode == "nearest" || o.mode == "nearest-exact" || o.mode == "area";
  if (not_interpolating && o.align_corners)
    fail(
        "[interpolate] align_corners option can only be set with the interpolating modes: linear | bilinear | "
        "bicubic | trilinear");
  if (input.dim() < 3 || input.dim() > 5)
    fail("[interpolate] expected a 3-D, 4-D or 5-D input [N, C, *spatial], got shape ", input.shape(), " (",
         input.dtype(), ")");
  const Kind kind = kind_of(o.mode, input.dim());
  if (o.antialias && (input.dim() != 4 || (o.mode != "bilinear" && o.mode != "bicubic")))
    fail("[interpolate] antialias=True is restricted to the bilinear and bicubic modes and a 4-D input, got mode '",
         o.mode, "' and input shape ", input.shape());
  if (kind != Kind::Nearest && kind != Kind::NearestExact && !is_floating(input.dtype()))
    fail<TypeError>("[interpolate] ", o.mode, " mode needs a floating point input, got dtype ", input.dtype());
  auto [size, scales] = output_size(input, o);
  const Dims in(input.shape().begin() + 2, input.shape().end());
  if (std::any_of(in.begin(), in.end(), [](int64_t s) { return s <= 0; }) ||
      std::any_of(size.begin(), size.end(), [](int64_t s) { return s <= 0; }))
    fail("[interpolate] input and output sizes should be greater than 0, but got input spatial size ", in,
         " and output size ", size, " (input shape ", input.shape(), ")");
  if (kind == Kind::Area) return area(input, size);
  // The last dim first: torch's kernels weight the innermost dim's taps first too.
  Tensor y = input;
  for (int64_t d = input.dim() - 1; d >= 2; --d)
    y = resize_dim(y, d, kind, size[d - 2], o.align_corners.value_or(false), o.antialias, scales[d - 2]);
  return y;
}

}  // namespace ug::nn::functional
