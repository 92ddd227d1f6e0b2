// Helpers derivative rules are written with: ops themselves, so rules that use them stay
// differentiable.
#pragma once

#include <functional>

#include "ug/core/tensor.h"

namespace ug::autograd {

/** A zero tensor of `shape` whose `view` holds g: the gradient of an op that picks part of
 *  its input. Its own derivative takes the same view, so double backward works. */
Tensor embed(const Tensor& g, const Shape& shape, const std::function<Tensor(const Tensor&)>& view);

/** The gradient g of a broadcast result, summed back to `shape` (undoes broadcasting). */
Tensor sum_to(const Tensor& g, const Shape& shape);

}  // namespace ug::autograd
