// Pooling, as torch.nn.functional spells it: max, average and adaptive pooling over the last
// one or two dims of [N, C, *spatial] or unbatched [C, *spatial] inputs. An empty stride
// means the kernel size; sizes given as one int apply to every spatial dim.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

/** Where each output of a 2-d pooling reads, as the backend sees it. Along spatial dim d,
 *  output i reads input positions start[d][i] + j * step[d] for j < count[d][i], skipping
 *  those outside the input (padding). An average divides the window's sum by
 *  divisor[0][i] * divisor[1][j]. */
struct PoolWindows {
  std::vector<int64_t> start[2], count[2];
  int64_t step[2] = {1, 1};
  std::vector<double> divisor[2];
  int64_t out_size(int d) const { return static_cast<int64_t>(start[d].size()); }
};

/** Max pooling; the indices (int64) are flat positions in each input plane (h * W + w). */
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Dims& kernel_size,
                                                  const Dims& stride = {}, const Dims& padding = {0},
                                                  const Dims& dilation = {1}, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, const Dims& dilation = {1}, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const Dims& kernel_size,
                                                  const Dims& stride = {}, const Dims& padding = {0},
                                                  const Dims& dilation = {1}, bool ceil_mode = false);
Tensor max_pool1d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, const Dims& dilation = {1}, bool ceil_mode = false);

Tensor avg_pool2d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = {});
Tensor avg_pool1d(const Tensor& input, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, bool ceil_mode = false, bool count_include_pad = true);

/** Adaptive pooling: output i of a dim of size n pooled to m reads [floor(i n / m),
 *  ceil((i + 1) n / m)). */
Tensor adaptive_avg_pool2d(const Tensor& input, const Dims& output_size);
Tensor adaptive_avg_pool1d(const Tensor& input, const Dims& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, const Dims& output_size);
Tensor adaptive_max_pool2d(const Tensor& input, const Dims& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, const Dims& output_size);
Tensor adaptive_max_pool1d(const Tensor& input, const Dims& output_size);

}  // namespace ug
