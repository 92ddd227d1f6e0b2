// 3-d convolution and pooling, as torch.nn.functional spells them, over [N, C, D, H, W] or
// unbatched [C, D, H, W]. Each is the 2-d op over the planes its depth windows gather: a
// convolution stacks the kd planes a window reads as channels (one im2col + GEMM with
// kd * C / groups input channels per group), a pooling reduces over them first.
#pragma once

#include <optional>
#include <utility>

#include "ug/ops/conv.h"

namespace ug {

/** weight [O, C / groups, kd, kh, kw]; padding may be "same" (stride 1) or "valid". */
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const Dims& stride = {1}, const ConvPadding& padding = 0, const Dims& dilation = {1}, int64_t groups = 1);

/** Max pooling; the indices (int64) are flat positions in each input volume (d * H * W + h * W + w).
 *  Among equal maxima the gradient goes to the first in depth of the first (h, w) holding one. */
std::pair<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const Dims& kernel_size, const Dims& stride = {},
                                                  const Dims& padding = {0}, const Dims& dilation = {1},
                                                  bool ceil_mode = false);
Tensor max_pool3d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {}, const Dims& padding = {0},
                  const Dims& dilation = {1}, bool ceil_mode = false);

Tensor avg_pool3d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {}, const Dims& padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true, std::optional<int64_t> divisor_override = {});

}  // namespace ug
