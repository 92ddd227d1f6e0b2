// 3x3 convolutions with unit stride by Winograd's minimal filtering F(2x2, 3x3): each 2x2
// block of outputs costs 16 multiplications per channel pair instead of 36, done as 16
// matrix products over all tiles (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016). float32 only; its rounding stays within a few eps of the summed
// magnitudes, like any summation order.
#pragma once

#include <cstdint>

#include "ug/backend/cpu/cpu_conv_epilogue.h"

namespace ug::cpu {

struct Winograd3x3 {
  int64_t N, C, H, W, O, pad_h, pad_w;
  int64_t out_h() const { return H + 2 * pad_h - 2; }
  int64_t out_w() const { return W + 2 * pad_w - 2; }
  /** Whether this shape runs faster this way than through im2col: enough tiles and channels
   *  for the products to be efficient, which the small late layers of a network are not (96
   *  tiles: 256 channels on 14x14 at batch 2, whose weight gradient takes 3.9 ms this way
   *  against 5.0 by the direct kernel; 512 on 7x7 at batch 2, 32 tiles, stays with it). */
  bool worthwhile() const;
};

/** y [N, O, Ho, Wo] = x [N, C, H, W] correlated with w [O, C, 3, 3], zero padding, plus bias [O]
 *  (may be null), then the epilogue. transposed: w is [C, O, 3, 3] and used flipped, w'[o][c] =
 *  w[c][o] rotated by 180 degrees, which makes this the input gradient of a 3x3 convolution. */
void winograd_conv3x3(const Winograd3x3& g, const float* x, const float* w, bool transposed, const float* bias,
                      float* y, Epilogue epilogue = {}, const float* filters = nullptr);

/** U [16][O][C] = G g G^T of w [O, C, 3, 3]: the filters winograd_conv3x3 multiplies by (given
 *  to it as `filters`, w is then not read). */
void winograd_transform_filters(int64_t O, int64_t C, const float* w, float* U);

/** gw [O, C, 3, 3] = the adjoint of winograd_conv3x3 (not transposed) in w, applied to the
 *  output gradient gy [N, O, Ho, Wo]: the same input tiles, the gradient's tiles transformed by
 *  A, 16 products summed over tiles, and G^T . G back to 3x3. */
void winograd_weight_grad3x3(const Winograd3x3& g, const float* x, const float* gy, float* gw);

}  // namespace ug::cpu
