// JAX's dynamic slicing (jax.lax.dynamic_slice, dynamic_update_slice): a block of a tensor at
// start indices that are tensors, such as a loop counter inside a compiled loop, where a
// Python int would have to be known when the program is traced. Composed of index_select and
// index_copy, so grad, vmap (a different start per example) and jit follow. As in JAX, a
// negative start counts from the end (allow_negative_indices), then each start is clamped so
// that the block fits inside the tensor.
#pragma once

#include <vector>

#include "ug/core/tensor.h"

namespace ug::lax {

/** The block of x with sizes `sizes` at `starts` (one integer scalar tensor per dim of x). */
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Dims& sizes,
                     bool allow_negative_indices = true);

/** x with the block at `starts` replaced by `update` (x's rank, each size at most x's). */
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts,
                            bool allow_negative_indices = true);

}  // namespace ug::lax
