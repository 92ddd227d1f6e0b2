// torch.nn.functional.linear: the fully connected layer as a function.
#pragma once

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** y = input @ weight^T + bias for input [..., in], weight [out, in] and bias [out] (optional):
 *  one matrix product over all leading dims, the bias added into its result. */
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});

}  // namespace ug::nn::functional
