#include "ug/ops/dynamic_slice.h"

#include <sstream>

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"

namespace ug::lax {

namespace {

/** Checks starts against x and the block's sizes; returns each dim's indices: the clamped start
 *  plus 0 .. size - 1. */
std::vector<Tensor> block_indices(const char* op, const Tensor& x, const std::vector<Tensor>& starts, const Dims& sizes,
                                  bool allow_negative_indices) {
  if (starts.size() != static_cast<size_t>(x.dim()) || sizes.size() != static_cast<size_t>(x.dim()))
    fail("[", op, "] needs one start index and one size per dim of the operand (shape ", x.shape(), "), got ",
         starts.size(), " start(s) and ", sizes.size(), " size(s)");
  std::vector<Tensor> indices;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const Tensor& s = starts[static_cast<size_t>(d)];
    const int64_t size = sizes[static_cast<size_t>(d)];
    if (!s.defined() || s.dim() != 0 || is_floating(s.dtype()) || s.dtype() == DType::Bool) {
      std::ostringstream got;
      if (s.defined()) got << s.dtype() << " of shape " << s.shape();
      fail<TypeError>("[", op, "] start index ", d, " must be an integer scalar tensor, got ",
                      s.defined() ? got.str() : "none");
    }
    if (size < 0 || size > x.size(d))
      fail("[", op, "] the block's size ", size, " in dim ", d, " must be within the operand's ", x.size(d), " (shape ",
           x.shape(), ")");
    Tensor start = s.to(DType::Int64);
    if (allow_negative_indices) start = where(start < Scalar(int64_t{0}), start + Scalar(x.size(d)), start);
    start = start.clamp(Scalar(int64_t{0}), Scalar(x.size(d) - size));
    indices.push_back(arange(size, {.dtype = DType::Int64, .device = x.device()}) + start);
  }
  return indices;
}

}  // namespace

Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Dims& sizes,
                     bool allow_negative_indices) {
  const std::vector<Tensor> indices = block_indices("dynamic_slice", x, starts, sizes, allow_negative_indices);
  Tensor block = x;
  for (int64_t d = 0; d < x.dim(); ++d) block = block.index_select(d, indices[static_cast<size_t>(d)]);
  return block;
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts,
                            bool allow_negative_indices) {
  if (update.dim() != x.dim())
    fail("[dynamic_update_slice] the update (shape ", update.shape(), ") must have the operand's rank (shape ",
         x.shape(), ")");
  if (update.dtype() != x.dtype())
    fail<TypeError>("[dynamic_update_slice] the update's dtype ", update.dtype(), " differs from the operand's ",
                    x.dtype());
  const Dims sizes(update.shape().begin(), update.shape().end());
  const std::vector<Tensor> indices = block_indices("dynamic_update_slice", x, starts, sizes, allow_negative_indices);
  // The block's elements as offsets into x flattened (row-major), one per element of update.
  Tensor offsets = zeros(update.shape(), {.dtype = DType::Int64, .device = x.device()});
  int64_t stride = 1;
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    Dims along(static_cast<size_t>(x.dim()), 1);
    along[static_cast<size_t>(d)] = sizes[static_cast<size_t>(d)];
    offsets = offsets + indices[static_cast<size_t>(d)].reshape(along) * Scalar(stride);
    stride *= x.size(d);
  }
  return index_copy(x.reshape({-1}), 0, offsets.reshape({-1}), update.reshape({-1})).reshape(x.shape());
}

}  // namespace ug::lax
