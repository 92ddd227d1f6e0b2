// torch.nn.functional.interpolate: resizing [N, C, *spatial] along its spatial dims, one dim
// at a time, as index_select (nearest) or two or four index_selects weighted and added (linear,
// bicubic), or as adaptive average pooling (area), so gradients and export are theirs. The
// indices and weights follow the arithmetic of torch's CPU kernels exactly (see
// interpolate.cpp for where those disagree with each other).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

struct InterpolateOptions {
  /** The output's spatial size: one per spatial dim, or one for every one. */
  std::optional<Dims> size;
  /** Multiplies the spatial sizes instead (one per spatial dim, or one for every one). Unless
   *  recompute_scale_factor, the source index of output i is computed with 1 / scale_factor,
   *  not with input size / output size: torch's rule. */
  std::optional<std::vector<double>> scale_factor;
  /** "nearest", "nearest-exact", "area", or "linear" / "bilinear" or "bicubic" / "trilinear" for
   *  3-D / 4-D / 5-D input. */
  std::string_view mode = "nearest";
  /** Linear and bicubic modes: map the corner pixels' centres onto each other (false when unset). */
  std::optional<bool> align_corners;
  /** Compute the output size from scale_factor, then interpolate as if it had been given. */
  std::optional<bool> recompute_scale_factor;
  /** Bilinear and bicubic on 4-D input: when downsampling, average over the filter widened by
   *  the scale (torchvision's and PIL's resize), not just the nearest taps. */
  bool antialias = false;
};

/** Resizes input [N, C, L], [N, C, H, W] or [N, C, D, H, W] as torch.nn.functional.interpolate. */
Tensor interpolate(const Tensor& input, const InterpolateOptions& options);

}  // namespace ug::nn::functional
