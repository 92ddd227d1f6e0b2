// torch.nn.functional.grid_sample and affine_grid: sampling an input at arbitrary points given
// in [-1, 1] coordinates, and the points an affine map gives. grid_sample gathers each tap of
// the interpolation from the input flattened over its spatial dims and weights it, so the
// gradients reaching both the input and the grid are those ops'.
#pragma once

#include <string_view>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** Samples input [N, C, *spatial] (1 to 3 spatial dims; torch has 2 and 3) at grid
 *  [N, *out, r], whose last dim lists the coordinates innermost first (x, then y, then z).
 *  mode: "bilinear" (linear in each dim), "nearest" or "bicubic" (Keys, a = -0.75);
 *  padding_mode: what a point outside reads, "zeros", "border" or "reflection". align_corners
 *  puts -1 and 1 at the corner pixels' centres, else at their outer edges. */
Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode = "bilinear",
                   std::string_view padding_mode = "zeros", bool align_corners = false);

/** The sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of the affine maps theta [N, 2, 3]
 *  (or [N, 3, 4]) for an output of size [N, C, H, W] (or [N, C, D, H, W]). */
Tensor affine_grid(const Tensor& theta, const Dims& size, bool align_corners = false);

}  // namespace ug::nn::functional
