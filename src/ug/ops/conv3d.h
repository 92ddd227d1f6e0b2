// 3-d convolution and pooling, as torch.nn.functional spells them, over [N, C, D, H, W] or
// unbatched [C, D, H, W]. Each is the 2-d op over the planes its depth windows gather: a
// convolution stacks the kd planes a window reads as channels (one im2col + GEMM with
// kd * C / groups input channels per group), a pooling reduces over them first; adaptive
// pooling and the transposed convolution run the lower-dim ops per plane, then over depth.
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

/** Adaptive pooling to output_size (one size or three): the (h, w) windows of every plane by the
 *  2-d op, then the depth windows over those by the 1-d op. The indices are flat positions in
 *  each input volume; among equal maxima the first in (d, h, w) order wins, as torch. */
Tensor adaptive_avg_pool3d(const Tensor& input, const Dims& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, const Dims& output_size);
Tensor adaptive_max_pool3d(const Tensor& input, const Dims& output_size);

/** The transposed 3-d convolution, weight [C, O / groups, kd, kh, kw]: one transposed 2-d
 *  convolution of every input plane per depth tap, added into the output planes that tap
 *  reaches (index_add), so no zeros are inserted between the input's planes. */
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                        const Dims& stride = {1}, const Dims& padding = {0}, const Dims& output_padding = {0},
                        int64_t groups = 1, const Dims& dilation = {1});

}  // namespace ug
