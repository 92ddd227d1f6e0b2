// torch.nn.functional's poolings made of other ops: max_unpool (a max pooling's values
// scattered back to their positions), lp_pool (a power mean over windows) and channel_shuffle.
#pragma once

#include <optional>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** [N, C, *in] values with the flat positions max_pool returned, scattered into zeros of
 *  [N, C, *out], out = (in - 1) * stride - 2 * padding + kernel_size unless output_size (the
 *  spatial sizes, or with N and C in front) gives it; `dims` (1 to 3) spatial dims, the
 *  batch dim optional. */
Tensor max_unpool(int64_t dims, const Tensor& input, const Tensor& indices, const Dims& kernel_size,
                  const Dims& stride = {}, const Dims& padding = {0}, const std::optional<Dims>& output_size = {});

/** (sum over each window of x^p)^(1/p) (torch's power-average pooling): avg_pool of x^p, times
 *  the window's size, to the 1/p; p = inf is max_pool of |x|. Over `dims` (1 to 3) dims. */
Tensor lp_pool(int64_t dims, const Tensor& input, double norm_type, const Dims& kernel_size, const Dims& stride = {},
               bool ceil_mode = false);

/** [N, C, *] with its channels in `groups` groups read column-wise (torch.nn.ChannelShuffle). */
Tensor channel_shuffle(const Tensor& input, int64_t groups);

}  // namespace ug::nn::functional
