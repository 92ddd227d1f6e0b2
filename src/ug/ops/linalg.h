// Matrix products as free functions, as in torch:: (the Tensor methods call these). Operands
// of different dtypes are promoted to their common dtype first.
#pragma once

#include <string_view>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

/** torch.matmul: 1-D operands are promoted to matrices and the added dim removed again;
 *  leading (batch) dims broadcast. */
Tensor matmul(const Tensor& a, const Tensor& b);
/** [M, K] @ [K, N]; both operands must be 2-D. */
Tensor mm(const Tensor& a, const Tensor& b);
/** [B, M, K] @ [B, K, N]; both operands must be 3-D with the same batch size. */
Tensor bmm(const Tensor& a, const Tensor& b);
/** The inner product of two 1-D tensors of the same length, as a 0-d tensor. */
Tensor dot(const Tensor& a, const Tensor& b);
/** out[i, j] = a[i] * b[j] for 1-D a and b. */
Tensor outer(const Tensor& a, const Tensor& b);
/** Einstein summation, e.g. "bij,bjk->bik", "ii->i", "...ij->...ji", "i,i". Letters label dims,
 *  "..." stands for broadcast dims; without "->" the output is the ellipsis dims followed by
 *  the labels used once, in alphabetical order. Operands are contracted left to right, each
 *  contraction one batched matrix product. */
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

}  // namespace ug
