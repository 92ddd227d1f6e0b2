// torch's conveniences written as compositions of other ops, so that their gradients, batching
// rules, forward mode, export and compiled forms are those of the ops they are made of.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
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
/** C's fmod: the remainder of a / b with the sign of a (remainder's has the sign of b). */
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, Scalar b);
/** Special functions, computed in float64 with ops (their derivatives are those of the
 *  formulas, accurate to about the values' own error) and returned in x's floating dtype
 *  (float32 for integers): log|Gamma(x)| by Lanczos's series (g = 7, 9 terms) with the
 *  reflection below 0.5, digamma by the recurrence up to x + 10 and the asymptotic series,
 *  erfinv by Giles's single-precision polynomial and two Newton steps on erf (exact to float64
 *  for |x| <= 0.99; nearer to +-1 the steps lose digits as erf flattens: about 1e-7 at 1 - 1e-10). */
Tensor lgamma(const Tensor& x);
Tensor digamma(const Tensor& x);
Tensor erfinv(const Tensor& x);
/** The modified Bessel function of the first kind of order 0: its power series for |x| <= 20,
 *  the asymptotic series beyond (both to about float64's precision), in float64 as the others. */
Tensor i0(const Tensor& x);
/** x - trunc(x). */
Tensor frac(const Tensor& x);
/** x rotated k quarter turns in the plane of dims, from the first towards the second. */
Tensor rot90(const Tensor& x, int64_t k = 1, const Dims& dims = {0, 1});
/** The Kronecker product (the ranks' shorter shape padded with leading 1s). */
Tensor kron(const Tensor& a, const Tensor& b);
/** The cross product of 3-vectors along dim (the first dim of size 3 of the broadcast shape
 *  when not given); a and b of one rank and dtype, broadcast. */
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim = {});
/** x's values at indices along dim, both broadcast over the other dims (no dim: x flattened). */
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = {});
/** Whether each element is among test's elements (or not, inverted). */
Tensor isin(const Tensor& elements, const Tensor& test, bool invert = false);
/** sum and mean that skip NaNs (an all-NaN mean is NaN, as torch's). Empty dims: all of them. */
Tensor nansum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor nanmean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
/** Views of x along dim: `sections` parts (the first n % sections one longer), or the parts
 *  between the split points `indices` (clamped to the dim, as slices are). */
std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int64_t dim = 0);
std::vector<Tensor> tensor_split(const Tensor& x, const Dims& indices, int64_t dim = 0);
/** The p-norm distances between the rows of x1 [..., P, M] and of x2 [..., R, M]: [..., P, R].
 *  p = 2 takes torch's matrix-product form where it would (compute_mode as torch's), a gradient of
 *  0 where a distance is 0. */
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0,
             std::string_view compute_mode = "use_mm_for_euclid_dist_if_necessary");
/** x with its elements where mask (broadcast to x) holds replaced, in order, by source's first
 *  elements. */
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);
/** x with values written (or added, accumulate: repeated positions add up) at the positions the
 *  index tensors give in x's leading dims (integer, broadcast together, or bool masks). */
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

// ---- order statistics, uniqueness, counting, searching, running extremes (composite_order.cpp)
/** The lower median (sorted position (n - 1) / 2): of every element as a 0-d tensor, or along
 *  dim with its index. A NaN is the median of a row holding one; nanmedian skips NaNs. */
Tensor median(const Tensor& x);
std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor nanmedian(const Tensor& x);
std::pair<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim = false);
/** The k-th smallest value along dim (k from 1) and its index. */
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
/** The most frequent value along dim (the smallest of equally frequent ones) and the index of
 *  its last occurrence. */
std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim = -1, bool keepdim = false);
/** The q-quantiles (q in [0, 1], 0-d or 1-d, x's dtype; a 1-d q is the result's first dim) over
 *  dim or all elements; interpolation "linear", "lower", "higher", "midpoint" or "nearest".
 *  nanquantile skips NaNs; quantile gives NaN for a row holding one. */
Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim = {}, bool keepdim = false,
                std::string_view interpolation = "linear");
Tensor quantile(const Tensor& x, double q, std::optional<int64_t> dim = {}, bool keepdim = false,
                std::string_view interpolation = "linear");
Tensor nanquantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim = {}, bool keepdim = false,
                   std::string_view interpolation = "linear");
Tensor nanquantile(const Tensor& x, double q, std::optional<int64_t> dim = {}, bool keepdim = false,
                   std::string_view interpolation = "linear");
/** (sorted distinct values, each element's position in them, how often each occurs); the
 *  last two are empty unless asked for. With dim: distinct slices along dim, in lexicographic
 *  order, and the inverse and counts per slice. unique_consecutive merges equal neighbours only. */
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool sorted = true, bool return_inverse = false,
                                          bool return_counts = false, std::optional<int64_t> dim = {});
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse = false,
                                                      bool return_counts = false, std::optional<int64_t> dim = {});
/** How often each value of a 1-d non-negative integer x occurs (or the sum of its weights),
 *  for the values 0 .. max(max(x), minlength - 1). */
Tensor bincount(const Tensor& x, const std::optional<Tensor>& weights = {}, int64_t minlength = 0);
/** A histogram of `bins` equal bins over [min, max] (min == max: x's own range); elements
 *  outside are left out. */
Tensor histc(const Tensor& x, int64_t bins = 100, double min = 0, double max = 0);
/** (hist, bin_edges) of x's elements (flattened): `bins` equal bins over range (x's own range
 *  when not given, [0, 1] for an empty x; an empty range is widened by 0.5 each way), or between
 *  the given 1-d edges (x's dtype). The last bin holds its right edge; elements outside are left
 *  out. weight (x's shape and dtype) weighs each element; density divides by the total and the
 *  bin widths. Not differentiable, as torch's. */
std::pair<Tensor, Tensor> histogram(const Tensor& x, int64_t bins, std::optional<std::pair<double, double>> range = {},
                                    const std::optional<Tensor>& weight = {}, bool density = false);
std::pair<Tensor, Tensor> histogram(const Tensor& x, const Tensor& bins, const std::optional<Tensor>& weight = {},
                                    bool density = false);
/** (hist, bin_edges) of x's points, the rows of its last dim (d of them, so hist has d dims):
 *  per dim, bins[k] equal bins over (range[2k], range[2k + 1]) or the points' own range, as
 *  histogram's, or between the given edges. weight has x's shape less the last dim; density
 *  divides by the total and the bins' volumes. Not differentiable, as torch's. */
std::pair<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, const std::vector<int64_t>& bins,
                                                   const std::optional<std::vector<double>>& range = {},
                                                   const std::optional<Tensor>& weight = {}, bool density = false);
std::pair<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, const std::vector<Tensor>& bins,
                                                   const std::optional<Tensor>& weight = {}, bool density = false);
/** Where values would go into each sorted row of sorted_sequence (1-d, or sharing values'
 *  leading dims) to keep it sorted: before equal elements, or after them (right, side =
 *  "right"); sorter sorts an unsorted sequence. bucketize is searchsorted into 1-d boundaries. */
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false, bool right = false,
                    std::optional<std::string_view> side = {}, const std::optional<Tensor>& sorter = {});
Tensor searchsorted(const Tensor& sorted_sequence, Scalar value, bool out_int32 = false, bool right = false,
                    std::optional<std::string_view> side = {}, const std::optional<Tensor>& sorter = {});
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32 = false, bool right = false);
/** The running maximum / minimum along dim and where it was reached (the latest position of a
 *  tie; a NaN, once met, stays). */
std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
/** log(cumsum(exp(x))) along dim, without overflow. */
Tensor logcumsumexp(const Tensor& x, int64_t dim);

}  // namespace ug
