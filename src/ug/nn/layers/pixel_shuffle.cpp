#include "ug/nn/layers/pixel_shuffle.h"

#include "ug/nn/functional/pixel_shuffle.h"

namespace ug::nn {

PixelShuffleImpl::PixelShuffleImpl(int64_t upscale_factor) : Module("PixelShuffle"), factor_(upscale_factor) {
  if (factor_ <= 0) fail("[PixelShuffle] upscale_factor must be positive, got ", factor_);
}

Tensor PixelShuffleImpl::forward(const Tensor& x) { return functional::pixel_shuffle(x, factor_); }

PixelUnshuffleImpl::PixelUnshuffleImpl(int64_t downscale_factor) : Module("PixelUnshuffle"), factor_(downscale_factor) {
  if (factor_ <= 0) fail("[PixelUnshuffle] downscale_factor must be positive, got ", factor_);
}

Tensor PixelUnshuffleImpl::forward(const Tensor& x) { return functional::pixel_unshuffle(x, factor_); }

}  // namespace ug::nn
