// The 3-d convolution and pooling layers over ug's 3-d ops (ops/conv3d.h), on [N, C, D, H, W].
#pragma once

#include <optional>
#include <string>

#include "ug/nn/layers/conv.h"
#include "ug/ops/conv3d.h"

namespace ug::nn {

class Conv3dImpl : public ConvImpl {
  UG_CLONEABLE(Conv3dImpl)
 public:
  Conv3dImpl(int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1}, ConvPadding padding = 0,
             Dims dilation = {1}, int64_t groups = 1, bool bias = true, std::string padding_mode = "zeros")
      : ConvImpl(3, in_channels, out_channels, std::move(kernel_size), std::move(stride), std::move(padding),
                 std::move(dilation), groups, bias, false, {0}, std::move(padding_mode)) {}
};
UG_MODULE(Conv3d);

class ConvTranspose3dImpl : public ConvImpl {
  UG_CLONEABLE(ConvTranspose3dImpl)
 public:
  ConvTranspose3dImpl(int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1},
                      Dims padding = {0}, Dims output_padding = {0}, int64_t groups = 1, bool bias = true,
                      Dims dilation = {1}, std::string padding_mode = "zeros")
      : ConvImpl(3, in_channels, out_channels, std::move(kernel_size), std::move(stride),
                 ConvPadding(std::move(padding)), std::move(dilation), groups, bias, true, std::move(output_padding),
                 std::move(padding_mode)) {}
};
UG_MODULE(ConvTranspose3d);

class MaxPool3dImpl : public MaxPoolImpl {
  UG_CLONEABLE(MaxPool3dImpl)
 public:
  explicit MaxPool3dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0}, Dims dilation = {1},
                         bool ceil_mode = false, bool return_indices = false)
      : MaxPoolImpl("MaxPool3d", 3, std::move(kernel_size), std::move(stride), std::move(padding), std::move(dilation),
                    ceil_mode, return_indices) {}
};
UG_MODULE(MaxPool3d);

class AvgPool3dImpl : public AvgPoolImpl {
  UG_CLONEABLE(AvgPool3dImpl)
 public:
  explicit AvgPool3dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0}, bool ceil_mode = false,
                         bool count_include_pad = true, std::optional<int64_t> divisor_override = {})
      : AvgPoolImpl("AvgPool3d", 3, std::move(kernel_size), std::move(stride), std::move(padding), ceil_mode,
                    count_include_pad, divisor_override) {}
};
UG_MODULE(AvgPool3d);

class AdaptiveAvgPool3dImpl : public AdaptivePoolImpl {
  UG_CLONEABLE(AdaptiveAvgPool3dImpl)
 public:
  explicit AdaptiveAvgPool3dImpl(Dims output_size)
      : AdaptivePoolImpl("AdaptiveAvgPool3d", 3, false, std::move(output_size)) {}
};
UG_MODULE(AdaptiveAvgPool3d);

class AdaptiveMaxPool3dImpl : public AdaptivePoolImpl {
  UG_CLONEABLE(AdaptiveMaxPool3dImpl)
 public:
  explicit AdaptiveMaxPool3dImpl(Dims output_size)
      : AdaptivePoolImpl("AdaptiveMaxPool3d", 3, true, std::move(output_size)) {}
};
UG_MODULE(AdaptiveMaxPool3d);

}  // namespace ug::nn
