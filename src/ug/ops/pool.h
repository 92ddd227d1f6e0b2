// Pooling, as torch.nn.functional spells it: max, average and adaptive pooling over the last
// one or two dims of [N, C, *spatial] or unbatched [C, *spatial] inputs. An empty stride
// means the kernel size; sizes given as one int apply to every spatial dim.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/ops/pool_kinds.h"

namespace ug {

/** Max pooling; the indices (int64) are flat positions in each input plane (h * W + w). */
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Dims& kernel_size, const Dims& stride = {},
                                                  const Dims& padding = {0}, const Dims& dilation = {1},
                                                  bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {}, const Dims& padding = {0},
                  const Dims& dilation = {1}, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const Dims& kernel_size, const Dims& stride = {},
                                                  const Dims& padding = {0}, const Dims& dilation = {1},
                                                  bool ceil_mode = false);
Tensor max_pool1d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {}, const Dims& padding = {0},
                  const Dims& dilation = {1}, bool ceil_mode = false);

Tensor avg_pool2d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {}, const Dims& padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true, std::optional<int64_t> divisor_override = {});
Tensor avg_pool1d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {}, const Dims& padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);

/** Adaptive pooling: output i of a dim of size n pooled to m reads [floor(i n / m),
 *  ceil((i + 1) n / m)). */
Tensor adaptive_avg_pool2d(const Tensor& input, const Dims& output_size);
Tensor adaptive_avg_pool1d(const Tensor& input, const Dims& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, const Dims& output_size);
Tensor adaptive_max_pool2d(const Tensor& input, const Dims& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, const Dims& output_size);
Tensor adaptive_max_pool1d(const Tensor& input, const Dims& output_size);

}  // namespace ug
