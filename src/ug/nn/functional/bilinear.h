// torch.nn.functional.bilinear: y_o = x1ᵀ W_o x2 + b_o, as one matmul of x1 with the weight
// laid out [in1, out * in2] and a product summed over in2, so its derivatives are theirs.
#pragma once

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** input1 [*, in1], input2 [*, in2] (the same leading dims), weight [out, in1, in2], bias [out]
 *  or undefined: [*, out]. */
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {});

}  // namespace ug::nn::functional
