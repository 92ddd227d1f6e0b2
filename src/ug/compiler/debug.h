// jax.debug.print's op: a callback on tensor values that runs now and again at every run of a
// compiled program that traced it (a replay: the one op that exists for its side effect).
#pragma once

#include <functional>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::compiler {

using DebugEmit = std::function<void(const std::vector<Tensor>&)>;

/** Calls emit(values) now and, when traced by ug::jit, at every run of the program with that
 *  run's values. */
void debug_callback(const DebugEmit& emit, const std::vector<Tensor>& values);

}  // namespace ug::compiler
