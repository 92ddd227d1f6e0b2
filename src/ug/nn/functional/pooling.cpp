#include "ug/nn/functional/pooling.h"

#include <cmath>
#include <limits>
#include <string>

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/conv3d.h"
#include "ug/ops/indexing.h"
#include "ug/ops/pool.h"
#include "ug/ops/unary.h"

namespace ug::nn::functional {

namespace {

/** One size for every spatial dim, or one per dim. */
Dims per_dim(const Dims& d, int64_t dims, const std::string& op, const char* what) {
  if (d.size() == 1) return Dims(static_cast<size_t>(dims), d[0]);
  if (static_cast<int64_t>(d.size()) != dims)
    fail("[", op, "] ", what, " must be an int or ", dims, " ints, got ", d.size(), " values");
  return d;
}

std::string op_name(const char* base, int64_t dims) { return base + std::to_string(dims) + "d"; }

}  // namespace

Tensor max_unpool(int64_t dims, const Tensor& input, const Tensor& indices, const Dims& kernel_size, const Dims& stride,
                  const Dims& padding, const std::optional<Dims>& output_size) {
  const std::string op = op_name("max_unpool", dims);
  if (input.dim() != dims + 1 && input.dim() != dims + 2)
    fail("[", op, "] expected a ", dims + 1, "-D or ", dims + 2, "-D input, got shape ", input.shape(), " (",
         input.dtype(), ")");
  if (indices.shape() != input.shape() || indices.dtype() != DType::Int64)
    fail("[", op, "] expected int64 indices of the input's shape ", input.shape(), ", got ", indices.dtype(), " ",
         indices.shape());
  const Dims k = per_dim(kernel_size, dims, op, "kernel_size"), p = per_dim(padding, dims, op, "padding");
  const Dims s = stride.empty() ? k : per_dim(stride, dims, op, "stride");
  const int64_t lead = input.dim() - dims;
  Dims out;
  for (int64_t i = 0; i < dims; ++i) out.push_back((input.size(lead + i) - 1) * s[i] - 2 * p[i] + k[i]);
  if (output_size) {
    Dims given = *output_size;
    if (static_cast<int64_t>(given.size()) == dims + lead) given = Dims(given.begin() + lead, given.end());
    if (static_cast<int64_t>(given.size()) != dims)
      fail("[", op, "] output_size must have ", dims, " or ", dims + lead, " elements, got ", output_size->size());
    for (int64_t i = 0; i < dims; ++i)
      if (given[i] <= out[i] - s[i] || given[i] >= out[i] + s[i])
        fail("[", op, "] output_size ", given, " is not between ", out[i] - s[i], " and ", out[i] + s[i],
             " (exclusive) in dim ", i);
    out = given;
  }
  Dims flat_in(input.shape().begin(), input.shape().begin() + lead), shape = flat_in;
  int64_t volume = 1;
  for (int64_t d : out) {
    volume *= d;
    shape.push_back(d);
  }
  flat_in.push_back(-1);
  Dims flat_out(shape.begin(), shape.begin() + lead);
  flat_out.push_back(volume);
  // scatter rejects an index outside the output (no read-back here, so the op exports).
  return scatter(zeros(flat_out, {.dtype = input.dtype()}), -1, indices.reshape(flat_in), input.reshape(flat_in))
      .reshape(shape);
}

Tensor lp_pool(int64_t dims, const Tensor& input, double p, const Dims& kernel_size, const Dims& stride,
               bool ceil_mode) {
  const std::string op = op_name("lp_pool", dims);
  const Dims k = per_dim(kernel_size, dims, op, "kernel_size");
  if (std::isinf(p)) {
    auto max_pool = dims == 1 ? max_pool1d : dims == 2 ? max_pool2d : max_pool3d;
    return p > 0 ? max_pool(input.abs(), k, stride, {0}, {1}, ceil_mode)
                 : -max_pool(-input.abs(), k, stride, {0}, {1}, ceil_mode);
  }
  Tensor out = dims == 1   ? avg_pool1d(input.pow(p), k, stride, {0}, ceil_mode, true)
               : dims == 2 ? avg_pool2d(input.pow(p), k, stride, {0}, ceil_mode, true, std::nullopt)
                           : avg_pool3d(input.pow(p), k, stride, {0}, ceil_mode, true, std::nullopt);
  int64_t window = 1;
  for (int64_t v : k) window *= v;
  // torch's order of operations: a negative mean (odd p) is cut to zero before the root.
  return (out.sign() * out.abs().relu() * static_cast<double>(window)).pow(1.0 / p);
}

Tensor channel_shuffle(const Tensor& input, int64_t groups) {
  if (input.dim() < 3)
    fail("[channel_shuffle] expected an input of at least 3 dims [N, C, *], got shape ", input.shape(), " (",
         input.dtype(), ")");
  if (groups <= 0 || input.size(1) % groups != 0)
    fail("[channel_shuffle] number of channels ", input.size(1), " must be divisible by groups, got groups=", groups);
  Dims split{input.size(0), groups, input.size(1) / groups};
  for (int64_t i = 2; i < input.dim(); ++i) split.push_back(input.size(i));
  return input.reshape(split).transpose(1, 2).reshape(input.shape());
}

}  // namespace ug::nn::functional
