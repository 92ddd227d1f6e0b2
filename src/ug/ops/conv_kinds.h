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
  /** The forward kernel's epilogue (ops::conv2d_fused sets it; the gradients never do): after
   *  the bias, add what `out` held before the call (a residual the caller copied there), then
   *  relu, in the order of the composed ops, so the bits are theirs. */
  bool accumulate = false;
  bool relu = false;
};

}  // namespace ug
