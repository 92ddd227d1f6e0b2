#include "ug/nn/functional/grid_sample.h"

#include <string>
#include <vector>

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/unary.h"

namespace ug::nn::functional {

namespace {

/** Folds v into [lo, hi] by reflecting it off the borders as often as it takes (torch's
 *  reflection padding); a border of no width maps everything onto it. */
Tensor reflect(const Tensor& v, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return add(mul(v, 0.0), lo);
  const Tensor below = lt(v, lo), above = gt(v, hi);
  const Tensor dx = where(below, sub(lo, v), sub(v, hi));
  const Tensor flips = floor(div(dx, range)).detach();
  const Tensor rem = sub(dx, mul(flips, range));
  const Tensor even = eq(sub(flips, mul(floor(div(flips, 2.0)), 2.0)), 0.0);
  const Tensor from_lo = add(rem, lo), from_hi = sub(hi, rem);
  return where(below, where(even, from_lo, from_hi), where(above, where(even, from_hi, from_lo), v));
}

/** One tap of the interpolation along one dim: the index it reads and its weight. */
struct Tap {
  Tensor index;  // int64
  Tensor weight;
};

/** The cubic convolution weights (Keys, a = -0.75) of the four taps around t in [0, 1). */
std::vector<Tensor> cubic_weights(const Tensor& t) {
  constexpr double a = -0.75;
  auto outer = [&](const Tensor& s) {  // |s| in [1, 2]
    return sub(mul(add(mul(sub(mul(s, a), 5 * a), s), 8 * a), s), 4 * a);
  };
  auto inner = [&](const Tensor& s) {  // |s| in [0, 1]
    return add(mul(mul(sub(mul(s, a + 2), a + 3), s), s), 1.0);
  };
  const Tensor u = sub(1.0, t);
  return {outer(add(t, 1.0)), inner(t), inner(u), outer(add(u, 1.0))};
}

/** -1 to 1 in `size` steps, at the pixel corners (align_corners) or centres; one step is at 0
 *  either way (torch's rule since 1.3). */
Tensor base_coordinates(int64_t size, bool align, DType dtype) {
  Tensor t = empty({size}, {.dtype = DType::Float64});
  double* p = t.data_ptr<double>();
  for (int64_t i = 0; i < size; ++i)
    p[i] = size == 1 ? 0.0
           : align   ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(size - 1)
                     : (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(size) - 1.0;
  return t.to(dtype);
}

}  // namespace

Tensor grid_sample(const Tensor& x, const Tensor& grid_in, std::string_view mode, std::string_view padding,
                   bool align) {
  const int64_t r = x.dim() - 2;
  if (r < 1 || r > 3)
    fail("[grid_sample] expected an input [N, C, *spatial] with 1 to 3 spatial dims, got shape ", x.shape(), " (",
         x.dtype(), ")");
  if (!is_floating(x.dtype()))
    fail<TypeError>("[grid_sample] expected a floating-point input, got ", x.dtype(), " (shape ", x.shape(), ")");
  if (grid_in.dtype() != x.dtype())
    fail<TypeError>("[grid_sample] expected input and grid of the same dtype, got ", x.dtype(), " and ",
                    grid_in.dtype());
  if (grid_in.dim() != r + 2 || grid_in.size(0) != x.size(0) || grid_in.size(-1) != r)
    fail("[grid_sample] expected a grid [", x.size(0), ", ..., ", r, "] with ", r, " dims between for input ",
         x.shape(), ", got ", grid_in.shape());
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    fail("[grid_sample] mode must be 'bilinear', 'nearest' or 'bicubic', got '", mode, "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    fail("[grid_sample] padding_mode must be 'zeros', 'border' or 'reflection', got '", padding, "'");

  const int64_t n = x.size(0), channels = x.size(1);
  Dims out_shape{n, channels};
  int64_t points = 1;
  for (int64_t d = 1; d <= r; ++d) {
    out_shape.push_back(grid_in.size(d));
    points *= grid_in.size(d);
  }
  const Tensor grid = grid_in.reshape({n, points, r});

  std::vector<std::vector<Tap>> taps(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    const int64_t size = x.size(2 + i);
    const double lo = align ? 0.0 : -0.5, hi = align ? size - 1.0 : size - 0.5;
    // A tap outside the input reads zero, the nearest border pixel or its reflection.
    auto tap = [&](const Tensor& at, Tensor weight) {
      Tensor index = at;
      if (padding == "zeros") weight = mul(weight, logical_and(ge(at, 0.0), le(at, size - 1.0)).to(x.dtype()));
      else if (padding == "reflection") index = floor(reflect(at, lo, hi));
      return Tap{clamp(index, 0.0, static_cast<double>(size - 1)).to(DType::Int64), std::move(weight)};
    };
    Tensor v = grid.select(2, r - 1 - i);
    v = align ? mul(add(v, 1.0), (size - 1) / 2.0) : div(sub(mul(add(v, 1.0), static_cast<double>(size)), 1.0), 2.0);
    if (mode == "nearest") v = round(v);
    // Cubic sampling clamps its taps, not the point (as torch and onnxruntime).
    if (padding == "border" && mode != "bicubic")
      v = where(logical_or(lt(v, lo), gt(v, hi)), clamp(v, 0.0, size - 1.0), v);
    else if (padding == "reflection") v = reflect(v, lo, hi);
    auto& dim_taps = taps[static_cast<size_t>(i)];
    if (mode == "nearest") {
      dim_taps.push_back(tap(v.detach(), ones_like(v)));
      continue;
    }
    const Tensor base = floor(v).detach(), t = sub(v, base);
    const std::vector<Tensor> weights = mode == "bilinear" ? std::vector<Tensor>{sub(1.0, t), t} : cubic_weights(t);
    const int64_t first = mode == "bilinear" ? 0 : -1;
    for (size_t k = 0; k < weights.size(); ++k)
      dim_taps.push_back(tap(add(base, static_cast<double>(first + static_cast<int64_t>(k))), weights[k]));
  }

  // Every combination of one tap per dim, read from the input flattened over its spatial dims.
  const Tensor flat = x.reshape({n, channels, -1});
  Tensor out;
  std::vector<size_t> pick(static_cast<size_t>(r), 0);
  while (true) {
    Tensor index, weight;
    for (int64_t i = 0; i < r; ++i) {
      const Tap& t = taps[static_cast<size_t>(i)][pick[static_cast<size_t>(i)]];
      index = index.defined() ? add(mul(index, x.size(2 + i)), t.index) : t.index;
      weight = weight.defined() ? mul(weight, t.weight) : t.weight;
    }
    const Tensor read = gather(flat, 2, index.unsqueeze(1).expand({n, channels, points}));
    const Tensor term = mul(read, weight.unsqueeze(1));
    out = out.defined() ? add(out, term) : term;
    int64_t i = r - 1;
    while (i >= 0 && ++pick[static_cast<size_t>(i)] == taps[static_cast<size_t>(i)].size())
      pick[static_cast<size_t>(i--)] = 0;
    if (i < 0) break;
  }
  return out.reshape(out_shape);
}

Tensor affine_grid(const Tensor& theta, const Dims& size, bool align) {
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  if (r != 2 && r != 3)
    fail("[affine_grid] size must be [N, C, H, W] or [N, C, D, H, W] (2-d and 3-d affine maps), got ", size.size(),
         " values");
  if (!is_floating(theta.dtype()))
    fail<TypeError>("[affine_grid] expected a floating-point theta, got ", theta.dtype(), " (shape ", theta.shape(),
                    ")");
  if (theta.dim() != 3 || theta.size(0) != size[0] || theta.size(1) != r || theta.size(2) != r + 1)
    fail("[affine_grid] expected theta of shape [", size[0], ", ", r, ", ", r + 1, "] for size ", size, ", got ",
         theta.shape());
  const Dims spatial(size.begin() + 2, size.end());
  int64_t points = 1;
  for (int64_t d : spatial) {
    if (d < 0) fail("[affine_grid] expected non-negative sizes, got ", size);
    points *= d;
  }
  // The homogeneous coordinates of every output point, innermost coordinate first, then 1.
  std::vector<Tensor> coords;
  for (int64_t i = r - 1; i >= 0; --i) {
    Dims view(static_cast<size_t>(r), 1);
    view[static_cast<size_t>(i)] = spatial[static_cast<size_t>(i)];
    coords.push_back(
        base_coordinates(spatial[static_cast<size_t>(i)], align, theta.dtype()).reshape(view).expand(spatial));
  }
  coords.push_back(ones(spatial, {.dtype = theta.dtype()}));
  const Tensor base = stack(coords, -1).reshape({points, r + 1});
  Dims out_shape{size[0]};
  for (int64_t d : spatial) out_shape.push_back(d);
  out_shape.push_back(r);
  return matmul(base, theta.transpose(1, 2)).reshape(out_shape);
}

}  // namespace ug::nn::functional
