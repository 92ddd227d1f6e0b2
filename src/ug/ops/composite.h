// torch's conveniences written as compositions of other ops, so that their gradients, batching
// rules, forward mode, export and compiled forms are those of the ops they are made of.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

/** The lower (tril) or upper (triu) triangle of the last two dims, from the `diagonal`-th
 *  diagonal (0 the main one, > 0 above it), the rest zeros. */
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/** A 1-d x: the square matrix with x on its `diagonal`-th diagonal. A 2-d x: a copy of that
 *  diagonal. */
Tensor diag(const Tensor& x, int64_t diagonal = 0);
/** The sum of a matrix's main diagonal. */
Tensor trace(const Tensor& x);
/** Coordinate grids from 1-d tensors: "ij" (matrix) indexing, or "xy" (Cartesian: the first
 *  two dims swapped); each result is an expanded view of its tensor. */
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");
/** beta * input + alpha * (mat1 @ mat2) with 2-d mats (addmm) or batches of them (baddbmm);
 *  beta = 0 ignores input (its NaNs too), as torch does. */
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta = 1, Scalar alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta = 1, Scalar alpha = 1);
/** input + value * t1 * t2, and input + value * t1 / t2 (floating only). */
Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value = 1);
Tensor addcdiv(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/** NaN, +inf and -inf replaced: by `nan`, and by `posinf`/`neginf` or else the dtype's largest
 *  and lowest finite values. Integer tensors come back copied. */
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = {},
                  std::optional<double> neginf = {});
/** x with alpha * source added at `index` along dim (index_add), or value written at those
 *  positions (index_fill). */
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha = 1);
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
/** log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given. */
Tensor logit(const Tensor& x, std::optional<double> eps = {});
/** x * log(y), 0 where x is 0 (unless y is NaN). */
Tensor xlogy(const Tensor& x, const Tensor& y);
/** sqrt(a^2 + b^2) without overflow or underflow in the squares. */
Tensor hypot(const Tensor& a, const Tensor& b);
/** x - trunc(x). */
Tensor frac(const Tensor& x);
/** x rotated k quarter turns in the plane of dims, from the first towards the second. */
Tensor rot90(const Tensor& x, int64_t k = 1, const Dims& dims = {0, 1});
/** The Kronecker product (the ranks' shorter shape padded with leading 1s). */
Tensor kron(const Tensor& a, const Tensor& b);
/** The cross product of 3-vectors along dim (the first dim of size 3 when not given). */
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim = {});
/** x's values at indices along dim, both broadcast over the other dims (no dim: x flattened). */
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = {});
/** Whether each element is among test's elements (or not, inverted). */
Tensor isin(const Tensor& elements, const Tensor& test, bool invert = false);
/** sum and mean that skip NaNs (an all-NaN mean is NaN, as torch's). Empty dims: all of them. */
Tensor nansum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor nanmean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);

}  // namespace ug
