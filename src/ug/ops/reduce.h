// Reductions, scans and sorting as free functions, as in torch:: (the Tensor methods of the
// same names call these). An empty dims list means every dimension, as in PyTorch.
#pragma once

#include <optional>
#include <utility>

#include "ug/core/tensor.h"

namespace ug {

Tensor sum(const Tensor& x, std::optional<DType> dtype = {});
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false, std::optional<DType> dtype = {});
Tensor mean(const Tensor& x, std::optional<DType> dtype = {});
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false, std::optional<DType> dtype = {});
Tensor prod(const Tensor& x, std::optional<DType> dtype = {});
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false, std::optional<DType> dtype = {});

/** The largest / smallest element as a 0-d tensor. */
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
/** (values, int64 indices) along one dim; the index is the first occurrence (or first NaN). */
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
/** Without a dim: the index into the flattened tensor. */
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);

/** Variance: sum of squared deviations over (N - correction); floating tensors only. */
Tensor var(const Tensor& x, const std::optional<Dims>& dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const std::optional<Dims>& dims = {}, double correction = 1, bool keepdim = false);
/** The vector p-norm over dims (all when absent): p = 0, 1, 2, inf, -inf or any other number. */
Tensor norm(const Tensor& x, Scalar p = 2, const std::optional<Dims>& dims = {}, bool keepdim = false);

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
/** Inclusive scans; bool and integer inputs give int64, as in PyTorch. */
Tensor cumsum(const Tensor& x, int64_t dim);
Tensor cumprod(const Tensor& x, int64_t dim);
/** torch's dtype= form: x cast to dtype first, the result in dtype (integers wrap as torch's). */
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype);

/** Logical reductions: bool results (uint8 for uint8 input, as in PyTorch). */
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
/** Over several dims. Unlike sum's, an empty list reduces none (torch's dim=()): x as bool. */
Tensor all(const Tensor& x, const Dims& dims, bool keepdim = false);
Tensor any(const Tensor& x, const Dims& dims, bool keepdim = false);

// ---- sorting (ops/sort.cpp) -------------------------------------------------------------
/** (values, int64 indices) sorted along dim; NaN sorts above every number. */
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
/** The k largest (or smallest) values along dim and their indices, best first. */
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);

}  // namespace ug
