// torch.nn.functional.pixel_shuffle / pixel_unshuffle: sub-pixel rearrangement between channels
// and space, as a reshape, a permutation and a reshape (so gradients and export are theirs).
#pragma once

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** [*, C·r², H, W] -> [*, C, H·r, W·r]: each group of r² channels becomes an r×r block of pixels. */
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
/** The inverse: [*, C, H·r, W·r] -> [*, C·r², H, W]. */
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);

}  // namespace ug::nn::functional
