// Convolution and pooling layers over ug's conv and pool ops (NCHW; see docs/migration.md
// for NHWC input).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "ug/nn/module.h"
#include "ug/ops/conv.h"

namespace ug::nn {

/** Conv1d, 2d and 3d: weight [out, in / groups, *kernel], PyTorch's default initialisation
 *  (kaiming_uniform_ with a = sqrt(5), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))). padding_mode
 *  "reflect", "replicate" or "circular" pads the input so before an unpadded convolution, as
 *  torch's; the transposed ones take only "zeros". Built under a Keras mixed-precision policy
 *  (nn/mixed_precision.h), as Dense, it keeps float32 weights and computes in the policy's
 *  16-bit dtype. */
class ConvImpl : public Module {
  UG_CLONEABLE(ConvImpl)
 public:
  ConvImpl(int spatial_dims, int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1},
           ConvPadding padding = 0, Dims dilation = {1}, int64_t groups = 1, bool bias = true, bool transposed = false,
           Dims output_padding = {0}, std::string padding_mode = "zeros");
  Tensor forward(const Tensor& x) override;
  /** A transposed layer's forward to output_size (torch's forward(input, output_size)): the
   *  output_padding that reaches it, in place of the layer's own. output_size holds the spatial
   *  sizes, or also the batch and channel ones; a size out of reach fails naming the range. */
  Tensor forward(const Tensor& x, const Dims& output_size);
  void reset_parameters() override;
  void load_lazy_shapes(const TensorDict& state, const std::string& prefix) override;
  std::string extra_repr() const override;
  /** Keras's layer.compute_dtype: the mixed-precision policy's 16-bit dtype, if built under one. */
  std::optional<DType> compute_dtype() const { return compute_dtype_; }

 private:
  /** A lazy layer's first forward (or load): its weight for `channels` input channels, in the
   *  default dtype; it becomes the regular layer (LazyConv2d prints as Conv2d). */
  void build(int64_t channels);
  Tensor run(const Tensor& x, const Dims& output_padding);

  int spatial_dims_;
  int64_t in_channels_, out_channels_;
  Dims kernel_size_, stride_;
  ConvPadding padding_;
  Dims dilation_;
  int64_t groups_;
  bool transposed_;
  Dims output_padding_;
  bool has_bias_;
  std::string padding_mode_;
  std::optional<DType> compute_dtype_;
};

class Conv1dImpl : public ConvImpl {
  UG_CLONEABLE(Conv1dImpl)
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
             ConvPadding padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true,
             std::string padding_mode = "zeros")
      : ConvImpl(1, in_channels, out_channels, {kernel_size}, {stride}, std::move(padding), {dilation}, groups, bias,
                 false, {0}, std::move(padding_mode)) {}
};
UG_MODULE(Conv1d);

class Conv2dImpl : public ConvImpl {
  UG_CLONEABLE(Conv2dImpl)
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1}, ConvPadding padding = 0,
             Dims dilation = {1}, int64_t groups = 1, bool bias = true, std::string padding_mode = "zeros")
      : ConvImpl(2, in_channels, out_channels, std::move(kernel_size), std::move(stride), std::move(padding),
                 std::move(dilation), groups, bias, false, {0}, std::move(padding_mode)) {}
};
UG_MODULE(Conv2d);

class ConvTranspose1dImpl : public ConvImpl {
  UG_CLONEABLE(ConvTranspose1dImpl)
 public:
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
                      int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, bool bias = true,
                      int64_t dilation = 1, std::string padding_mode = "zeros")
      : ConvImpl(1, in_channels, out_channels, {kernel_size}, {stride}, ConvPadding(Dims{padding}), {dilation}, groups,
                 bias, true, {output_padding}, std::move(padding_mode)) {}
};
UG_MODULE(ConvTranspose1d);

class ConvTranspose2dImpl : public ConvImpl {
  UG_CLONEABLE(ConvTranspose2dImpl)
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, Dims kernel_size, Dims stride = {1},
                      Dims padding = {0}, Dims output_padding = {0}, int64_t groups = 1, bool bias = true,
                      Dims dilation = {1}, std::string padding_mode = "zeros")
      : ConvImpl(2, in_channels, out_channels, std::move(kernel_size), std::move(stride),
                 ConvPadding(std::move(padding)), std::move(dilation), groups, bias, true, std::move(output_padding),
                 std::move(padding_mode)) {}
};
UG_MODULE(ConvTranspose2d);

/** Max pooling over the last `dims` (1 to 3) dims; stride defaults to kernel_size. forward gives
 *  the maxima; with return_indices, Python's forward (torch's) also gives forward_with_indices's
 *  positions (for MaxUnpool). */
class MaxPoolImpl : public Module {
  UG_CLONEABLE(MaxPoolImpl)
 public:
  MaxPoolImpl(std::string type_name, int64_t dims, Dims kernel_size, Dims stride, Dims padding, Dims dilation,
              bool ceil_mode, bool return_indices = false)
      : Module(std::move(type_name)),
        dims_(dims),
        kernel_(std::move(kernel_size)),
        stride_(std::move(stride)),
        padding_(std::move(padding)),
        dilation_(std::move(dilation)),
        ceil_mode_(ceil_mode),
        return_indices_(return_indices) {}
  Tensor forward(const Tensor& x) override;
  std::pair<Tensor, Tensor> forward_with_indices(const Tensor& x);
  bool return_indices() const { return return_indices_; }
  std::string extra_repr() const override;

 private:
  int64_t dims_;
  Dims kernel_, stride_, padding_, dilation_;
  bool ceil_mode_, return_indices_;
};

/** Average pooling over the last `dims` (1 to 3) dims; divisor_override is not 1-d's. */
class AvgPoolImpl : public Module {
  UG_CLONEABLE(AvgPoolImpl)
 public:
  AvgPoolImpl(std::string type_name, int64_t dims, Dims kernel_size, Dims stride, Dims padding, bool ceil_mode,
              bool count_include_pad, std::optional<int64_t> divisor_override)
      : Module(std::move(type_name)),
        dims_(dims),
        kernel_(std::move(kernel_size)),
        stride_(std::move(stride)),
        padding_(std::move(padding)),
        ceil_mode_(ceil_mode),
        count_include_pad_(count_include_pad),
        divisor_override_(divisor_override) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 private:
  int64_t dims_;
  Dims kernel_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
  std::optional<int64_t> divisor_override_;
};

/** Adaptive average or max pooling of the last `dims` (1 to 3) dims to output_size; a negative
 *  size (torch's None) keeps the input's. */
class AdaptivePoolImpl : public Module {
  UG_CLONEABLE(AdaptivePoolImpl)
 public:
  AdaptivePoolImpl(std::string type_name, int64_t dims, bool max, Dims output_size)
      : Module(std::move(type_name)), dims_(dims), max_(max), output_size_(std::move(output_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 private:
  int64_t dims_;
  bool max_;
  Dims output_size_;
};

#define UG_MAX_POOL(Name, Dims_)                                                                     \
  class Name##Impl : public MaxPoolImpl {                                                            \
    UG_CLONEABLE(Name##Impl)                                                                         \
   public:                                                                                           \
    explicit Name##Impl(Dims kernel_size, Dims stride = {}, Dims padding = {0}, Dims dilation = {1}, \
                        bool ceil_mode = false, bool return_indices = false)                         \
        : MaxPoolImpl(#Name, Dims_, std::move(kernel_size), std::move(stride), std::move(padding),   \
                      std::move(dilation), ceil_mode, return_indices) {}                             \
  };                                                                                                 \
  UG_MODULE(Name);
UG_MAX_POOL(MaxPool1d, 1)
UG_MAX_POOL(MaxPool2d, 2)
#undef UG_MAX_POOL

class AvgPool1dImpl : public AvgPoolImpl {
  UG_CLONEABLE(AvgPool1dImpl)
 public:
  explicit AvgPool1dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0}, bool ceil_mode = false,
                         bool count_include_pad = true)
      : AvgPoolImpl("AvgPool1d", 1, std::move(kernel_size), std::move(stride), std::move(padding), ceil_mode,
                    count_include_pad, {}) {}
};
UG_MODULE(AvgPool1d);

class AvgPool2dImpl : public AvgPoolImpl {
  UG_CLONEABLE(AvgPool2dImpl)
 public:
  explicit AvgPool2dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0}, bool ceil_mode = false,
                         bool count_include_pad = true, std::optional<int64_t> divisor_override = {})
      : AvgPoolImpl("AvgPool2d", 2, std::move(kernel_size), std::move(stride), std::move(padding), ceil_mode,
                    count_include_pad, divisor_override) {}
};
UG_MODULE(AvgPool2d);

#define UG_ADAPTIVE_POOL(Name, Dims_, Max)                                                                 \
  class Name##Impl : public AdaptivePoolImpl {                                                             \
    UG_CLONEABLE(Name##Impl)                                                                               \
   public:                                                                                                 \
    explicit Name##Impl(Dims output_size) : AdaptivePoolImpl(#Name, Dims_, Max, std::move(output_size)) {} \
  };                                                                                                       \
  UG_MODULE(Name);
UG_ADAPTIVE_POOL(AdaptiveAvgPool1d, 1, false)
UG_ADAPTIVE_POOL(AdaptiveAvgPool2d, 2, false)
UG_ADAPTIVE_POOL(AdaptiveMaxPool1d, 1, true)
UG_ADAPTIVE_POOL(AdaptiveMaxPool2d, 2, true)
#undef UG_ADAPTIVE_POOL

}  // namespace ug::nn
