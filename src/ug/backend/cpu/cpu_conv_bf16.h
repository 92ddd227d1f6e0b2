// bfloat16 convolutions (cpu_conv_bf16.cpp): the three faces of conv2d on bfloat16 operands,
// without a float32 copy of a whole activation.
#pragma once

#include "ug/backend/cpu/cpu_backend.h"

namespace ug::cpu {

/** out = conv(x, w) + bias, every operand bfloat16, each element rounded once. */
void conv2d_bf16(CpuBackend& be, const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                 const Tensor& out);
/** gx = the adjoint of conv in x applied to g, bfloat16, each element rounded once. */
void conv2d_input_grad_bf16(CpuBackend& be, const Tensor& g, const Tensor& w, const Conv2dParams& p, const Tensor& gx);
/** gw = the adjoint of conv in w applied to g, bfloat16, each element rounded once. */
void conv2d_weight_grad_bf16(CpuBackend& be, const Tensor& x, const Tensor& g, const Conv2dParams& p, const Tensor& gw);

}  // namespace ug::cpu
