// Convolution and pooling layers over ug's conv and pool ops (NCHW; see docs/migration.md
// for NHWC input).
#pragma once

#include <optional>
#include <string>

#include "ug/nn/module.h"
#include "ug/ops/conv.h"

namespace ug::nn {

/** Conv1d and Conv2d: weight [out, in / groups, *kernel], PyTorch's default initialisation
 *  (kaiming_uniform_ with a = sqrt(5), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))). */
class ConvImpl : public Module {
  UG_CLONEABLE(ConvImpl)
 public:
  ConvImpl(int spatial_dims, int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1},
           ConvPadding padding = 0, Dims dilation = {1}, int64_t groups = 1, bool bias = true, bool transposed = false,
           Dims output_padding = {0});
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  std::string extra_repr() const override;

 private:
  int spatial_dims_;
  int64_t in_channels_, out_channels_;
  Dims kernel_size_, stride_;
  ConvPadding padding_;
  Dims dilation_;
  int64_t groups_;
  bool transposed_;
  Dims output_padding_;
  bool has_bias_;
};

class Conv1dImpl : public ConvImpl {
  UG_CLONEABLE(Conv1dImpl)
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
             ConvPadding padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true)
      : ConvImpl(1, in_channels, out_channels, {kernel_size}, {stride}, std::move(padding), {dilation}, groups, bias) {}
};
UG_MODULE(Conv1d);

class Conv2dImpl : public ConvImpl {
  UG_CLONEABLE(Conv2dImpl)
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1}, ConvPadding padding = 0,
             Dims dilation = {1}, int64_t groups = 1, bool bias = true)
      : ConvImpl(2, in_channels, out_channels, std::move(kernel_size), std::move(stride), std::move(padding),
                 std::move(dilation), groups, bias) {}
};
UG_MODULE(Conv2d);

class ConvTranspose2dImpl : public ConvImpl {
  UG_CLONEABLE(ConvTranspose2dImpl)
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1},
                      Dims padding = {0}, Dims output_padding = {0}, int64_t groups = 1, bool bias = true,
                      Dims dilation = {1})
      : ConvImpl(2, in_channels, out_channels, std::move(kernel_size), std::move(stride),
                 ConvPadding(std::move(padding)), std::move(dilation), groups, bias, true, std::move(output_padding)) {}
};
UG_MODULE(ConvTranspose2d);

class MaxPool2dImpl : public Module {
  UG_CLONEABLE(MaxPool2dImpl)
 public:
  MaxPool2dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0}, Dims dilation = {1}, bool ceil_mode = false)
      : Module("MaxPool2d"),
        kernel_(std::move(kernel_size)),
        stride_(std::move(stride)),
        padding_(std::move(padding)),
        dilation_(std::move(dilation)),
        ceil_mode_(ceil_mode) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 private:
  Dims kernel_, stride_, padding_, dilation_;
  bool ceil_mode_;
};
UG_MODULE(MaxPool2d);

class AvgPool2dImpl : public Module {
  UG_CLONEABLE(AvgPool2dImpl)
 public:
  AvgPool2dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0}, bool ceil_mode = false,
                bool count_include_pad = true, std::optional<int64_t> divisor_override = {})
      : Module("AvgPool2d"),
        kernel_(std::move(kernel_size)),
        stride_(std::move(stride)),
        padding_(std::move(padding)),
        ceil_mode_(ceil_mode),
        count_include_pad_(count_include_pad),
        divisor_override_(divisor_override) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 private:
  Dims kernel_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
  std::optional<int64_t> divisor_override_;
};
UG_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl : public Module {
  UG_CLONEABLE(AdaptiveAvgPool2dImpl)
 public:
  explicit AdaptiveAvgPool2dImpl(Dims output_size)
      : Module("AdaptiveAvgPool2d"), output_size_(std::move(output_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 private:
  Dims output_size_;
};
UG_MODULE(AdaptiveAvgPool2d);

}  // namespace ug::nn
