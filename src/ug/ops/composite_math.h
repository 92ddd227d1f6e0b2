// More of torch's conveniences as compositions of other ops (composite_math.cpp): products
// and matrix builders, statistics, finite differences, elementwise helpers and scatters. Their
// gradients, batching rules, forward mode, export and compiled forms are those of the ops
// they are made of.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

// ---- products and matrices
/** The sum over the last `dims` dims of a and the first `dims` of b, or over the dims paired
 *  by dims_a and dims_b (same dtypes, equal sizes). */
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);
Tensor tensordot(const Tensor& a, const Tensor& b, const Dims& dims_a, const Dims& dims_b);
/** The sum over the last dims of a and b (a product when one is 0-d). */
Tensor inner(const Tensor& a, const Tensor& b);
/** A 2-d matrix times a 1-d vector. */
Tensor mv(const Tensor& mat, const Tensor& vec);
/** beta * input + alpha * (mat @ vec), beta * input + alpha * outer(vec1, vec2), and
 *  beta * input + alpha * sum_b(batch1[b] @ batch2[b]); beta = 0 ignores input, as addmm. */
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta = 1, Scalar alpha = 1);
Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2, Scalar beta = 1, Scalar alpha = 1);
Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta = 1, Scalar alpha = 1);
/** The dot product of two 1-d tensors (real dtypes: no conjugation to do). */
Tensor vdot(const Tensor& a, const Tensor& b);
/** The product of 2-d matrices in the cheapest order, as linalg::multi_dot (one matrix: itself). */
Tensor chain_matmul(const std::vector<Tensor>& matrices);
/** The block-diagonal matrix of 0-d (1 x 1), 1-d (1 x n) and 2-d blocks, in their promoted dtype. */
Tensor block_diag(const std::vector<Tensor>& tensors);
/** Matrices, in dims dim1 and dim2 of the result, with x's last dim on their `offset`-th
 *  diagonal. */
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
/** The square matrix with the flattened x on its `offset`-th diagonal. */
Tensor diagflat(const Tensor& x, int64_t offset = 0);
/** The covariance of the rows of x (variables) over its columns (observations), with integer
 *  frequency weights and floating observation weights as torch.cov. */
Tensor cov(const Tensor& x, int64_t correction = 1, const std::optional<Tensor>& fweights = {},
           const std::optional<Tensor>& aweights = {});
/** Pearson's correlation coefficients of x's rows, clipped to [-1, 1]. */
Tensor corrcoef(const Tensor& x);
/** The p-norm of a - b, over every element. */
Tensor dist(const Tensor& a, const Tensor& b, double p = 2.0);
/** The Vandermonde matrix of 1-d x: columns x^(N-1) .. x^0 (increasing: x^0 .. x^(N-1));
 *  integers in int64. */
Tensor vander(const Tensor& x, std::optional<int64_t> n = {}, bool increasing = false);
/** The trapezoidal rule along dim, with sample points x (1-d, or y's shape) or spacing dx. */
Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
Tensor trapezoid(const Tensor& y, Scalar dx = 1, int64_t dim = -1);
/** trapezoid's running sums along dim: one fewer entry than y there. x is 1-d or has y's
 *  sample count along dim and broadcasts with y. */
Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
Tensor cumulative_trapezoid(const Tensor& y, Scalar dx = 1, int64_t dim = -1);
/** The derivative along each of dims (all of x's when empty) by central differences inside and
 *  one-sided ones of order edge_order (1 or 2) at the ends, with a uniform spacing per dim (one
 *  for all, or one each) or 1-d sample coordinates per dim. */
std::vector<Tensor> gradient(const Tensor& x, const std::vector<Scalar>& spacing = {1}, const Dims& dims = {},
                             int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& x, const std::vector<Tensor>& coordinates, const Dims& dims = {},
                             int64_t edge_order = 1);
/** The n-th forward difference along dim, after prepend and append are joined to x there
 *  (bool: logical xor). */
Tensor diff(const Tensor& x, int64_t n = 1, int64_t dim = -1, const std::optional<Tensor>& prepend = {},
            const std::optional<Tensor>& append = {});
/** Each slice along dim whose p-norm exceeds maxnorm scaled to maxnorm (torch's factor
 *  maxnorm / (norm + 1e-7)). */
Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm);
/** Every combination of the 1-d tensors' elements, one per row (one tensor: itself). */
Tensor cartesian_prod(const std::vector<Tensor>& tensors);
/** The r-element combinations of a 1-d x's elements (with repeats: with_replacement), one per
 *  row, in lexicographic order of positions. */
Tensor combinations(const Tensor& x, int64_t r = 2, bool with_replacement = false);
/** The [2, N] row and column indices of the lower (upper) triangle of a row x col matrix,
 *  from the `offset`-th diagonal, row by row. */
Tensor tril_indices(int64_t row, int64_t col, int64_t offset = 0, Options opts = {});
Tensor triu_indices(int64_t row, int64_t col, int64_t offset = 0, Options opts = {});
/** The coordinates in `shape` of flat (row-major) integer indices, one tensor per dim (indices
 *  taken modulo the element count, as torch 2.13 does). */
std::vector<Tensor> unravel_index(const Tensor& indices, const Dims& shape);

// ---- elementwise
/** 1 - erf(x) in float64 below x = 2.5 (losing log10(1 / erfc(x)) of float64's 16 digits: at
 *  most 3.4, relative error ~3e-13), a continued fraction from 2.5 on (relative error ~2e-16,
 *  however tiny erfc is); returned in x's floating dtype (float32 for integers). */
Tensor erfc(const Tensor& x);
Tensor deg2rad(const Tensor& x);
Tensor rad2deg(const Tensor& x);
/** sign for real x; z / |z| (0 at 0) for complex z, as torch.sgn. */
Tensor sgn(const Tensor& x);
/** Whether the sign bit is set (-0.0 included). */
Tensor signbit(const Tensor& x);
/** sin(pi x) / (pi x), 1 at 0. */
Tensor sinc(const Tensor& x);
/** |a| with b's sign (b's sign bit: -0.0 counts as negative); a floating result. */
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, Scalar b);
/** 0 where x < 0, values where x == 0, 1 where x > 0 (x and values of one dtype). */
Tensor heaviside(const Tensor& x, const Tensor& values);
/** a ** b in float64. */
Tensor float_power(const Tensor& a, const Tensor& b);
Tensor float_power(const Tensor& a, Scalar b);
Tensor float_power(Scalar a, const Tensor& b);
/** maximum / minimum that take the other value where one is NaN (ties: a's gradient). */
Tensor fmax(const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);
/** log2(2^a + 2^b) without overflow. */
Tensor logaddexp2(const Tensor& a, const Tensor& b);
/** x itself (bool refused, as torch's unary +). */
Tensor positive(const Tensor& x);
Tensor isposinf(const Tensor& x);
Tensor isneginf(const Tensor& x);
/** True everywhere: unigrad's dtypes are real. */
Tensor isreal(const Tensor& x);
/** Whether a one-element tensor is nonzero. */
bool is_nonzero(const Tensor& x);
/** x * 2^e, floating. */
Tensor ldexp(const Tensor& x, const Tensor& e);
/** The multivariate log-gamma of dimension p: sum_i lgamma(x - i / 2) + p (p - 1) / 4 log(pi).
 *  Like torch 2.13's, it does not check that x > (p - 1) / 2 (below, lgamma's log|Gamma|). */
Tensor mvlgamma(const Tensor& x, int64_t p);
/** (min, max) over every element, or along dim. */
std::pair<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
/** a / b rounded as rounding_mode says: none (true division), "trunc" (towards 0) or "floor"
 *  (towards -inf). A rounded quotient keeps the promoted dtype (integers stay integers; an
 *  integer division by 0 is an error) and has a gradient of 0. */
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode);
Tensor div(const Tensor& a, Scalar b, std::optional<std::string_view> rounding_mode);
/** x rounded half to even at `decimals` decimal places (negative: to tens, hundreds, ...), by
 *  scaling with 10^|decimals|, as torch; floating x only. */
Tensor round(const Tensor& x, int64_t decimals);
/** x = mantissa * 2^exponent with |mantissa| in [0.5, 1) (0, inf and NaN: themselves, exponent
 *  0); the exponent is int32. Floating x only. */
std::pair<Tensor, Tensor> frexp(const Tensor& x);
/** The next value after a towards b in their promoted dtype, which must be floating (b where
 *  they are equal).
 *  Not differentiable, as torch's. */
Tensor nextafter(const Tensor& a, const Tensor& b);
/** The greatest common divisor and least common multiple of integer tensors (broadcast,
 *  non-negative; gcd(0, 0) = 0, lcm(0, x) = 0). */
Tensor gcd(const Tensor& a, const Tensor& b);
Tensor lcm(const Tensor& a, const Tensor& b);
/** clamp with only a lower (clamp_min) or upper (clamp_max) bound. */
Tensor clamp_min(const Tensor& x, Scalar min);
Tensor clamp_min(const Tensor& x, const Tensor& min);
Tensor clamp_max(const Tensor& x, Scalar max);
Tensor clamp_max(const Tensor& x, const Tensor& max);

// ---- shapes and scatters
/** tensor_split along dim 1 (dim 0 of a 1-d x), 0 and 2; an int must divide the dim. */
std::vector<Tensor> hsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> hsplit(const Tensor& x, const Dims& indices);
std::vector<Tensor> vsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> vsplit(const Tensor& x, const Dims& indices);
std::vector<Tensor> dsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> dsplit(const Tensor& x, const Dims& indices);
/** 0-d and 1-d tensors as columns, then hstack. */
Tensor column_stack(const std::vector<Tensor>& tensors);
/** The tensors expanded to their common broadcast shape. */
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);
Dims broadcast_shapes(const std::vector<Dims>& shapes);
/** x sorted along dim 0. */
Tensor msort(const Tensor& x);
/** x with src written into x[start:end:step] along dim, or into x.select(dim, index). */
Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = {},
                     std::optional<int64_t> end = {}, int64_t step = 1);
Tensor select_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t index);
/** x with src written into x.diagonal(offset, dim1, dim2), or into the view of that size,
 *  stride and storage offset (default x's own) on a copy of x's storage that keeps x's strides
 *  and offset, as torch's (an x whose elements overlap is copied contiguous first). */
Tensor diagonal_scatter(const Tensor& x, const Tensor& src, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor as_strided_scatter(const Tensor& x, const Tensor& src, const Dims& size, const Dims& stride,
                          std::optional<int64_t> storage_offset = {});
/** x with source's slices along dim written at positions `index` (1-d). */
Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source);
/** x with source's slices along dim reduced into the positions `index` (1-d, in [0, n)) gives:
 *  "prod", "mean" (integers round down), "amax" or "amin"; x's own slice included unless
 *  include_self is false. */
Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, std::string_view reduce,
                    bool include_self = true);
/** x with src's elements reduced into the positions index gives along dim: "sum", "prod", "mean"
 *  (integers round down), "amax" or "amin"; x's own value included unless include_self is false. */
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self = true);
/** base ** linspace(start, end, steps). */
Tensor logspace(double start, double end, int64_t steps, double base = 10.0, Options opts = {});
/** Uniform integers in [low, high) of x's shape and dtype (or opts'). */
Tensor randint_like(const Tensor& x, int64_t low, int64_t high, Options opts = {});

}  // namespace ug
