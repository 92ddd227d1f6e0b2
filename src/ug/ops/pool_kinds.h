// What the backends' pooling kernels are told, below both ops and backends.
#pragma once

#include <cstdint>
#include <vector>

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

}  // namespace ug
