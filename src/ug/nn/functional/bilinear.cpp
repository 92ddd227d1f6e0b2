#include "ug/nn/functional/bilinear.h"

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/linalg.h"
#include "ug/ops/reduce.h"

namespace ug::nn::functional {

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  if (weight.dim() != 3)
    fail("[bilinear] expected a weight [out, in1, in2], got shape ", weight.shape(), " (", weight.dtype(), ")");
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  if (input1.dim() < 1 || input1.dim() != input2.dim() ||
      !std::equal(input1.shape().begin(), input1.shape().end() - 1, input2.shape().begin()))
    fail("[bilinear] input batch dimensions do not match: got ", input1.shape(), " and ", input2.shape());
  if (input1.size(-1) != in1 || input2.size(-1) != in2)
    fail("[bilinear] input sizes ", input1.size(-1), " and ", input2.size(-1), " do not match weight ", weight.shape());
  if (input1.dtype() != weight.dtype() || input2.dtype() != weight.dtype() ||
      (bias.defined() && bias.dtype() != weight.dtype()))
    fail<TypeError>("[bilinear] expected inputs, weight and bias of one dtype, got ", input1.dtype(), ", ",
                    input2.dtype(), " and ", weight.dtype());
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out))
    fail("[bilinear] expected a bias of ", out, " elements, got shape ", bias.shape());
  Dims lead(input1.shape().begin(), input1.shape().end() - 1);
  Dims mid = lead;
  mid.push_back(out);
  mid.push_back(in2);
  // [*, in1] @ [in1, out * in2] -> [*, out, in2], then each row dotted with x2.
  const Tensor left = matmul(input1, weight.permute({1, 0, 2}).reshape({in1, out * in2})).reshape(mid);
  Tensor y = (left * input2.unsqueeze(-2)).sum({-1});
  return bias.defined() ? y + bias : y;
}

}  // namespace ug::nn::functional
