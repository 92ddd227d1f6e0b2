// Convolutions, as torch.nn.functional spells them: conv1d, conv2d and their transposes.
// Inputs are [N, C, *spatial] or unbatched [C, *spatial]; weights are [O, C / groups, *kernel]
// (transposed: [C, O / groups, *kernel]); bias is [O]. Sizes given as one int apply to
// every spatial dim.
#pragma once

#include <concepts>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "ug/core/tensor.h"
#include "ug/ops/conv_kinds.h"

namespace ug {

/** A convolution's padding: sizes per spatial dim (one size for all), or "valid" (none) or
 *  "same" (the output keeps the input's size; stride 1 only; the odd extra goes right). */
struct ConvPadding {
  template <std::integral I>  // a template, so a literal 0 is a size and not a null string
  ConvPadding(I size) : sizes{static_cast<int64_t>(size)} {}
  ConvPadding(Dims sizes) : sizes(std::move(sizes)) {}
  ConvPadding(std::initializer_list<int64_t> sizes) : sizes(sizes) {}
  ConvPadding(const char* mode) : mode(mode) {}
  ConvPadding(std::string_view mode) : mode(mode) {}
  ConvPadding(std::string mode) : mode(std::move(mode)) {}

  Dims sizes;
  std::string mode;  // "valid" or "same" when set; sizes is used otherwise
};

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const Dims& stride = {1}, const ConvPadding& padding = 0, const Dims& dilation = {1}, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const Dims& stride = {1}, const ConvPadding& padding = 0, const Dims& dilation = {1}, int64_t groups = 1);

/** relu(conv2d(input, weight, bias, stride, padding, dilation, groups) + residual) (no
 *  residual: relu(conv2d(...))), for inference: one kernel, the add and relu in its epilogue,
 *  where nothing records the call (no gradient wanted, no capture, forward tangent, vmap or
 *  autocast) and the residual has the output's shape and the operands are float32 on the CPU;
 *  otherwise the composed ops. Either way the same bits. residual_dies: nothing reads the
 *  residual after this call (the caller's reference is its last), so the fused kernel may
 *  write the result into its buffer instead of a copy. */
Tensor conv2d_relu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const std::optional<Tensor>& residual, const Dims& stride, const Dims& padding,
                   const Dims& dilation = {1}, int64_t groups = 1, bool residual_dies = false);

/** The transposed convolution (the gradient of conv with respect to its input), with
 *  torch's argument order. */
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                        const Dims& stride = {1}, const Dims& padding = {0}, const Dims& output_padding = {0},
                        int64_t groups = 1, const Dims& dilation = {1});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                        const Dims& stride = {1}, const Dims& padding = {0}, const Dims& output_padding = {0},
                        int64_t groups = 1, const Dims& dilation = {1});

}  // namespace ug
