// PixelShuffle and PixelUnshuffle (torch.nn's), over F::pixel_shuffle / pixel_unshuffle.
#pragma once

#include "ug/nn/module.h"

namespace ug::nn {

class PixelShuffleImpl : public Module {
  UG_CLONEABLE(PixelShuffleImpl)
 public:
  explicit PixelShuffleImpl(int64_t upscale_factor);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "upscale_factor=" + std::to_string(factor_); }

 private:
  int64_t factor_;
};
UG_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public Module {
  UG_CLONEABLE(PixelUnshuffleImpl)
 public:
  explicit PixelUnshuffleImpl(int64_t downscale_factor);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "downscale_factor=" + std::to_string(factor_); }

 private:
  int64_t factor_;
};
UG_MODULE(PixelUnshuffle);

}  // namespace ug::nn
