// Indexing ops as free functions, as torch:: has them (the Tensor methods are declared in
// tensor.h and defined in indexing.cpp). Index tensors are int64 (int32 where torch allows
// it); an out-of-range index raises IndexError before any kernel runs.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
/** torch's scatter(..., reduce=): src's elements (or value) added ("add") or multiplied
 *  ("multiply") into x at index; scatter_reduce's "sum" and "prod" with x included. */
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, std::string_view reduce);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/** Elements of x at flat (row-major) positions `index`; negative positions count from the end. */
Tensor take(const Tensor& x, const Tensor& index);
/** torch.put: x with source's elements written (or, accumulating, added) at the positions
 *  index gives into x flattened; negative positions count from the end. */
Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate = false);
/** index as int64 with its negative entries counted from the end of a dim of size n (ONNX's
 *  Gather); one below -n raises, the others are range-checked by the op reading it. Without a
 *  negative entry no op runs: a compiled program's gather of a batch would pay for them at
 *  every step. */
Tensor wrap_negative(const Tensor& index, int64_t n);
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
Tensor masked_select(const Tensor& x, const Tensor& mask);
Tensor flip(const Tensor& x, const Dims& dims);
Tensor fliplr(const Tensor& x);
Tensor flipud(const Tensor& x);
Tensor roll(const Tensor& x, const Dims& shifts, const Dims& dims = {});
Tensor tile(const Tensor& x, const Dims& reps);
/** Each element `repeats` times along dim, or over the flattened tensor when dim is absent. */
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = {});
/** Element i repeats[i] times (repeats: an integer tensor, 1-d with one count per element
 *  along dim, or of one element for all). The output's length is the counts' sum, which a
 *  compiled program cannot read from the data: output_size gives it (jax.numpy.repeat's
 *  total_repeat_length), and is checked against the sum when run eagerly. */
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = {},
                         std::optional<int64_t> output_size = {});
/** torch.repeat_interleave(repeats): the index i repeats[i] times. */
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = {});
/** int64 coordinates of the nonzero elements, [count, ndim]. */
Tensor nonzero(const Tensor& x);
Tensor argwhere(const Tensor& x);
/** torch.where(cond) / nonzero(as_tuple=True): one 1-d coordinate tensor per dimension. */
std::vector<Tensor> where(const Tensor& cond);
/** The number of nonzero elements, as a 0-d int64 tensor. */
Tensor count_nonzero(const Tensor& x);
/** The number of nonzero elements along dims (every dim when the list is empty), int64. */
Tensor count_nonzero(const Tensor& x, const Dims& dims);

}  // namespace ug
