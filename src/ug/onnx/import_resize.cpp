// The op table's Resize, as onnx's reference computes it: one axis at a time (every mode is
// separable), each output position a weighted sum of input positions along the axis, edges
// repeated. The taps and weights are computed on the host; the values move through ug ops.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ug/onnx/import_util.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/reduce.h"

namespace ug::onnx {

namespace {

/** Where output position i of an axis falls in the input (coordinate_transformation_mode). The
 *  modes that divide by the output length take it unrounded, in * scale; roi is
 *  tf_crop_and_resize's [start, end] along the axis. */
double resize_source(const OpContext& c, std::string_view mode, int64_t i, int64_t in, int64_t out, double scale,
                     std::pair<double, double> roi) {
  const double x = static_cast<double>(i), n = static_cast<double>(in), m = static_cast<double>(out);
  const double length = n * scale;
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") return n / 2 * (1 - m / length) + (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (mode == "align_corners") return length == 1 ? 0 : x * (n - 1) / (length - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_crop_and_resize") {
    const auto [start, end] = roi;  // in the reference's order of operations, for its roundings
    return (length == 1 ? (end - start) * (n - 1) / 2 : x * (end - start) * (n - 1) / (length - 1)) + start * (n - 1);
  }
  c.fail("coordinate_transformation_mode '", mode, "' is not supported");
}

struct Interpolation {
  std::string mode;  // linear or cubic
  double a;          // cubic_coeff_a
  bool antialias;

  /** The weights of the taps around a source position at `ratio` (in (0, 1]) past the tap
   *  before it. Antialiasing a downscale stretches the kernel by 1 / scale, with more taps. */
  std::vector<double> weights(double ratio, double scale) const {
    auto near = [&](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
    auto far = [&](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // 1 < |t| < 2
    if (!antialias) {
      if (mode == "linear") return {1 - ratio, ratio};
      return {far(ratio + 1), near(ratio), near(1 - ratio), far(2 - ratio)};
    }
    const double s = std::min(scale, 1.0);
    const int64_t reach = mode == "linear" ? 1 : 2;
    const auto first = static_cast<int64_t>(std::floor(-static_cast<double>(reach) / s)) + 1;
    std::vector<double> w;
    for (int64_t i = first; i < 2 - first; ++i) {
      const double t = std::abs((static_cast<double>(i) - ratio) * s);
      w.push_back(mode == "linear" ? std::max(0.0, 1 - t) : t <= 1 ? near(t) : t < 2 ? far(t) : 0.0);
    }
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    for (double& v : w) v /= total;
    return w;
  }
};

int64_t nearest_index(const OpContext& c, std::string_view mode, double src) {
  const double fl = std::floor(src), frac = src - fl;
  if (mode == "round_prefer_floor") return static_cast<int64_t>(frac <= 0.5 ? fl : fl + 1);
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(frac < 0.5 ? fl : fl + 1);
  if (mode == "floor") return static_cast<int64_t>(fl);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(src));
  c.fail("nearest_mode '", mode, "' is not supported");
}

Outputs resize_op(const OpContext& c) {
  Tensor x = c.input(0);
  const DType dtype = x.dtype();
  const std::string mode = c.attr_string("mode", "nearest");
  const std::string coords = c.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = c.attr_string("nearest_mode", "round_prefer_floor");
  const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
  const Interpolation interpolation{mode, c.attr_float("cubic_coeff_a", -0.75), c.attr_int("antialias", 0) != 0};
  if (mode != "nearest" && mode != "linear" && mode != "cubic") c.fail("mode '", mode, "' is not supported");
  if (mode == "nearest" && interpolation.antialias) c.fail("antialias applies to linear and cubic modes, not nearest");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    c.fail("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, got '", policy, "'");
  if (mode != "nearest" && !is_floating(dtype)) c.fail<TypeError>(mode, " resizing needs floats, got ", dtype);
  const int64_t rank = x.dim();
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (auto given = c.attr_ints("axes")) {
    axes = *given;
    for (int64_t& a : axes) a = norm_axis(c, a, rank);
  }
  auto doubles = [&](size_t i) {
    std::vector<double> v;
    if (!c.has_input(i) || c.input(i).numel() == 0) return v;
    const Tensor t = c.input(i).detach().to(DType::Float64).contiguous();
    return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  };
  const auto sizes = c.ints_input(3);
  const std::vector<double> scales = doubles(2), roi = doubles(1);
  if (scales.empty() == (!sizes || sizes->empty())) c.fail("give exactly one of scales and sizes");
  const size_t count = scales.empty() ? sizes->size() : scales.size();
  if (count != axes.size()) c.fail(count, " scales or sizes for ", axes.size(), " axes");
  const bool crop = coords == "tf_crop_and_resize";
  if (crop && roi.size() != 2 * count) c.fail("tf_crop_and_resize needs roi with ", 2 * count, " values");
  // Each axis's scale and output length; an aspect-ratio policy gives the sizes' axes one scale.
  std::vector<double> scale(count);
  std::vector<int64_t> out(count);
  for (size_t k = 0; k < count; ++k) {
    const auto in = static_cast<double>(x.size(axes[k]));
    scale[k] = scales.empty() ? static_cast<double>((*sizes)[k]) / in : scales[k];
    out[k] = scales.empty() ? (*sizes)[k] : static_cast<int64_t>(std::floor(in * scale[k]));
  }
  if (scales.empty() && policy != "stretch") {
    const double common = policy == "not_larger" ? *std::min_element(scale.begin(), scale.end())
                                                 : *std::max_element(scale.begin(), scale.end());
    for (size_t k = 0; k < count; ++k) {
      scale[k] = common;
      out[k] = static_cast<int64_t>(common * static_cast<double>(x.size(axes[k])) + 0.5);
    }
  }
  const bool exclude_outside = c.attr_int("exclude_outside", 0);
  const double extrapolation = c.attr_float("extrapolation_value", 0.0);
  for (size_t k = 0; k < count; ++k) {
    const int64_t axis = axes[k], in = x.size(axis);
    const std::pair<double, double> window = crop ? std::pair(roi[k], roi[k + count]) : std::pair(0.0, 1.0);
    if (!(scale[k] > 0) || !std::isfinite(scale[k]) || out[k] <= 0 || in == 0)
      c.fail("axis ", axis, " of ", x.shape(), ": scale ", scale[k], " gives ", out[k]);
    if (out[k] == in && scale[k] == 1.0 && window == std::pair(0.0, 1.0)) continue;
    Dims out_shape = x.shape();
    out_shape[static_cast<size_t>(axis)] = out[k];
    check_new_shape(c, out_shape);
    const int64_t taps =
        mode == "nearest" ? 1 : static_cast<int64_t>(interpolation.weights(0.5, scale[k]).size());  // one per axis
    std::vector<int64_t> index(static_cast<size_t>(out[k] * taps));
    std::vector<double> weight(index.size(), 1.0);
    std::vector<int64_t> outside;  // tf_crop_and_resize's positions past the input: extrapolation_value
    for (int64_t i = 0; i < out[k]; ++i) {
      const double src = resize_source(c, coords, i, in, out[k], scale[k], window);
      if (crop && (src < 0 || src > static_cast<double>(in - 1))) outside.push_back(i);
      const size_t row = static_cast<size_t>(i * taps);
      if (mode == "nearest") {
        index[row] = std::clamp<int64_t>(nearest_index(c, nearest, src), 0, in - 1);
        continue;
      }
      // The neighbours on the left win ties: an integral source takes ratio 1 from its left.
      const double fl = std::floor(src), frac = src - fl;
      const std::vector<double> w = interpolation.weights(frac == 0 ? 1.0 : frac, scale[k]);
      const int64_t first = static_cast<int64_t>(fl) - taps / 2 + (frac == 0 ? 0 : 1);
      double total = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t at = first + t;
        weight[row + static_cast<size_t>(t)] = exclude_outside && (at < 0 || at >= in) ? 0 : w[static_cast<size_t>(t)];
        total += weight[row + static_cast<size_t>(t)];
        index[row + static_cast<size_t>(t)] = std::clamp<int64_t>(at, 0, in - 1);
      }
      if (exclude_outside && total != 0)
        for (int64_t t = 0; t < taps; ++t) weight[row + static_cast<size_t>(t)] /= total;
    }
    const Tensor picked = x.index_select(axis, int_tensor(index));  // the taps of each output position, in a row
    if (mode == "nearest") {
      x = picked;
    } else {
      Dims split = x.shape();
      split[static_cast<size_t>(axis)] = out[k];
      split.insert(split.begin() + axis + 1, taps);
      Tensor w = empty({out[k], taps}, {.dtype = DType::Float64});
      std::copy(weight.begin(), weight.end(), w.data_ptr<double>());
      Dims w_shape(static_cast<size_t>(rank + 1), 1);
      w_shape[static_cast<size_t>(axis)] = out[k];
      w_shape[static_cast<size_t>(axis + 1)] = taps;
      x = mul(picked.reshape(split).to(DType::Float64), w.reshape(w_shape)).sum({axis + 1});
    }
    if (!outside.empty()) {
      Tensor mask = zeros({out[k]}, {.dtype = DType::Bool});
      for (int64_t i : outside) mask.data_ptr<bool>()[i] = true;
      Dims mask_shape(static_cast<size_t>(rank), 1);
      mask_shape[static_cast<size_t>(axis)] = out[k];
      x = where(mask.reshape(mask_shape), full({}, extrapolation, {.dtype = x.dtype()}), x);
    }
  }
  return one(x.dtype() == dtype ? x : x.to(dtype));
}

}  // namespace

void add_resize_ops(std::vector<OpSpec>& ops) { ops.push_back({"Resize", resize_op, 1, 4, 1, 1, {}}); }

}  // namespace ug::onnx
