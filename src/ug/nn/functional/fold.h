// torch.nn.functional.unfold / fold (im2col / col2im): the blocks a sliding window reads, laid
// out as columns, and their sum back into an image. Both are one indexing op over the
// zero-padded image flattened per channel, with one index list (where each block value sits in
// it): unfold gathers, fold scatter-adds, so each one's derivative is the other.
#pragma once

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** [N, C, *spatial] -> [N, C * prod(block), L]: every block of `block` values (dilated, strided
 *  over the image padded with zeros by pads, the begins of every dim then the ends) as a
 *  column, channel major then block offsets; L blocks, the last spatial dim fastest. */
Tensor im2col(const Tensor& input, const Dims& block, const Dims& dilation, const Dims& stride, const Dims& pads);
/** The adjoint of im2col: [N, C * prod(block), L] -> [N, C, *image], each value added into the
 *  position it was read from (ONNX's Col2Im). */
Tensor col2im(const Tensor& input, const Dims& image, const Dims& block, const Dims& dilation, const Dims& stride,
              const Dims& pads);

/** torch.nn.functional.unfold: im2col of [N, C, H, W] (or [C, H, W]) with torch's arguments,
 *  each one size or one per spatial dim. */
Tensor unfold(const Tensor& input, const Dims& kernel_size, const Dims& dilation = {1}, const Dims& padding = {0},
              const Dims& stride = {1});
/** torch.nn.functional.fold: col2im of [N, C * kh * kw, L] (or [C * kh * kw, L]) into
 *  [N, C, *output_size]. */
Tensor fold(const Tensor& input, const Dims& output_size, const Dims& kernel_size, const Dims& dilation = {1},
            const Dims& padding = {0}, const Dims& stride = {1});

}  // namespace ug::nn::functional
