// Views torch has as methods that Tensor (core/tensor.h) does not declare, as free functions;
// they are defined with the other views in ops/view.cpp.
#pragma once

#include "ug/core/tensor.h"

namespace ug {

/** The windows of `size` elements every `step` along dim, as a view: dim holds the windows,
 *  a new last dim each window's elements (torch's Tensor.unfold). */
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step);

/** x with its dims source moved to the positions destination, the others keeping their order
 *  (torch.movedim with sequences). */
Tensor movedim(const Tensor& x, const Dims& source, const Dims& destination);

/** x's elements with no gradient through them (jax.lax.stop_gradient): Tensor::detach as an op.
 *  A compiled program keeps it (its detach() alone is not captured), so that differentiating
 *  the program from outside (grad of a jitted function) still cuts there; Python's
 *  Tensor.detach() is this. */
Tensor stop_gradient(const Tensor& x);

// torch's in-place views: t itself (every handle to it) takes the layout of the view of it,
// its data untouched; its version goes up and its history is the view op's, so backward
// through t sees the view's derivative. A leaf that requires grad refuses under grad mode.
Tensor& transpose_(Tensor& t, int64_t dim0, int64_t dim1);
Tensor& t_(Tensor& t);
Tensor& squeeze_(Tensor& t);
Tensor& squeeze_(Tensor& t, const Dims& dims);
Tensor& unsqueeze_(Tensor& t, int64_t dim);
Tensor& as_strided_(Tensor& t, const Dims& shape, const Dims& strides, int64_t offset);
/** t as a contiguous tensor of `shape` from its storage offset on: the same storage where it
 *  holds that many elements, otherwise a larger one holding the old elements first (the rest
 *  uninitialised). Refuses a tensor that requires grad, as torch does. */
Tensor& resize_(Tensor& t, const Dims& shape);
Tensor& resize_as_(Tensor& t, const Tensor& other);

}  // namespace ug
