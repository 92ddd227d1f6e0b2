// jax.debug.print's op: a callback on tensor values that runs now and again at every run of a
// compiled program that traced it (a replay: the one op that exists for its side effect).
#pragma once

#include <functional>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::compiler {

using DebugEmit = std::function<void(const std::vector<Tensor>&)>;

/** Calls emit(values) now and, when traced by ug::jit, at every run of the program with that
 *  run's values (a program that runs after its trace: not while it is traced). Under vmap,
 *  emit is called once for each example, in order. */
void debug_callback(const DebugEmit& emit, const std::vector<Tensor>& values);

/** Inside a ug::jit trace, keeps `call` for the end of the trace and returns true: a program
 *  that writes state returns its trace's results as its first call's, so the trace's debug
 *  callbacks run then; any other program runs after its trace, which drops them. Elsewhere
 *  (eager code, an ONNX export) returns false. Defined in program.cpp, beside the trace. */
bool defer_debug_callback(std::function<void()> call);

}  // namespace ug::compiler
