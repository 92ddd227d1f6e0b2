// Reinterpreting a tensor's bytes as another dtype: torch's Tensor.view(dtype) (a view) and
// jax.lax.bitcast_convert_type / tf.bitcast (a new tensor, with their shape rule).
#pragma once

#include "ug/core/tensor.h"

namespace ug {

/** torch's Tensor.view(dtype): x's storage read as dtype, no copy (writes through it change
 *  x). Same element size: x's shape and strides. Otherwise the last dim, of stride 1, holds
 *  old/new times as many elements (a smaller dtype) or new/old times fewer (a larger one: its
 *  size, the storage offset and the other strides must divide by that ratio); a 0-d x only
 *  views as a dtype of its element size. Not differentiable, as in torch: the result never
 *  requires grad. */
Tensor view(const Tensor& x, DType dtype);

/** jax.lax.bitcast_convert_type (tf.bitcast): x's bytes as a new tensor of dtype. Same element
 *  size: x's shape; a smaller dtype adds a last dim of old/new elements; a larger one needs a
 *  last dim of new/old elements and drops it. Bool converts only to bool, as in JAX. */
Tensor bitcast_convert_type(const Tensor& x, DType dtype);

}  // namespace ug
