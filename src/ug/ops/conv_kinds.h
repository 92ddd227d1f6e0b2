// What the backends' convolution kernels are told, below both ops and backends.
#pragma once

#include <cstdint>

namespace ug {

/** The geometry of a 2-d convolution as the backend sees it: x [N, C, H, W], weight
 *  [O, C / groups, kh, kw], out [N, O, Ho, Wo], out[i] reading x at i * stride - padding +
 *  k * dilation. */
struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};

}  // namespace ug
