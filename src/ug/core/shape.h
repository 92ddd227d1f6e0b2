// Shapes and strides (in elements), and the rules every op shares: dimension wrapping,
// broadcasting, contiguity.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "ug/core/small_vector.h"

namespace ug {

using Shape = SmallVector<int64_t, 6>;
using Strides = SmallVector<int64_t, 6>;

int64_t numel_of(const Shape& shape);
/** Row-major strides for a contiguous tensor of this shape. */
Strides contiguous_strides(const Shape& shape);
/** True when a tensor with these shape and strides is laid out row-major without gaps. */
bool is_contiguous(const Shape& shape, const Strides& strides);
/** Maps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range. */
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
/** NumPy broadcasting of two shapes; throws ValueError naming `op` when they don't broadcast. */
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

std::string shape_str(const Shape& shape);  // "[2, 3]"
std::ostream& operator<<(std::ostream& os, const Shape& shape);

}  // namespace ug
