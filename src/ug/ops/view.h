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

}  // namespace ug
