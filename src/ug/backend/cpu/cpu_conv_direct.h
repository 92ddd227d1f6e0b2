// A direct float32 convolution on AVX-512 for one group, unit dilation and column stride 1 or
// 2: the weights packed into blocks of 64 output channels ([C][kh][kw][64] each, kept in a
// cache keyed by the weight's storage and version; a weight first seen at its version, as every
// weight of a training step is, is packed a block's pass at a time as the kernel runs instead,
// where one task covers a block's pixels) and a register-tiled micro-kernel over a zero-padded
// copy of the input, 64 channels x 6 output pixels at a time, each FMA taking its input value
// as an embedded broadcast: no column matrix, no per-call weight packing.
#pragma once

#include <cstdint>

#include "ug/backend/cpu/cpu_conv_epilogue.h"
#include "ug/core/tensor.h"

namespace ug::cpu {

struct DirectConv {
  int64_t N, C, H, W, O, kh, kw, Ho, Wo, sh, sw, ph, pw;
  Epilogue epilogue = {};
};

/** y [N, O, Ho, Wo] = x [N, C, H, W] correlated with w [O, C, kh, kw], zero padding, plus bias
 *  [O] (may be undefined), then g.epilogue. transposed: w is [C, O, kh, kw] and used rotated by 180 degrees,
 *  w'[o][c] = w[c][o] flipped, which makes this the input gradient of a unit-stride
 *  convolution by w. Call only on an AVX-512 CPU. */
void direct_conv2d(const DirectConv& g, const Tensor& x, const Tensor& w, bool transposed, const Tensor& bias,
                   const Tensor& y);

/** gw [O, C, kh, kw] = the weight gradient of direct_conv2d (not transposed) for x [N, C, H, W]
 *  and the output gradient gy [N, O, Ho, Wo], summed in an order fixed by the shape. Call only
 *  on an AVX-512 CPU. */
void direct_conv2d_weight_grad(const DirectConv& g, const Tensor& x, const Tensor& gy, const Tensor& gw);

/** w [O, C, 3, 3]'s Winograd filters U [16][O][C] (winograd_transform_filters), made once per
 *  weight version and cached with the packed weights of direct_conv2d: an inference call then
 *  does not transform them again. */
Tensor winograd_filters(const Tensor& w);

}  // namespace ug::cpu
