// Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (torch.nn's), over F::interpolate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ug/nn/module.h"

namespace ug::nn {

/** Resizes [N, C, *spatial] to `size` or by `scale_factor` (one value for every spatial dim, or
 *  one each) in `mode`, as functional::interpolate; checked when called, as torch does. */
class UpsampleImpl : public Module {
  UG_CLONEABLE(UpsampleImpl)
 public:
  explicit UpsampleImpl(std::optional<Dims> size = {}, std::optional<std::vector<double>> scale_factor = {},
                        std::string mode = "nearest", std::optional<bool> align_corners = {},
                        std::optional<bool> recompute_scale_factor = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 protected:
  UpsampleImpl(std::string type_name, std::optional<Dims> size, std::optional<std::vector<double>> scale_factor,
               std::string mode, std::optional<bool> align_corners);

 private:
  std::optional<Dims> size_;
  std::optional<std::vector<double>> scale_factor_;
  std::string mode_;
  std::optional<bool> align_corners_, recompute_scale_factor_;
};
UG_MODULE(Upsample);

/** Upsample in mode "nearest" (torch.nn.UpsamplingNearest2d). */
class UpsamplingNearest2dImpl : public UpsampleImpl {
  UG_CLONEABLE(UpsamplingNearest2dImpl)
 public:
  explicit UpsamplingNearest2dImpl(std::optional<Dims> size = {}, std::optional<std::vector<double>> scale_factor = {});
};
UG_MODULE(UpsamplingNearest2d);

/** Upsample in mode "bilinear" with align_corners (torch.nn.UpsamplingBilinear2d). */
class UpsamplingBilinear2dImpl : public UpsampleImpl {
  UG_CLONEABLE(UpsamplingBilinear2dImpl)
 public:
  explicit UpsamplingBilinear2dImpl(std::optional<Dims> size = {},
                                    std::optional<std::vector<double>> scale_factor = {});
};
UG_MODULE(UpsamplingBilinear2d);

}  // namespace ug::nn
