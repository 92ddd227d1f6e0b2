// The profiler's hook in every op call (graph/op_call.h). While a profiler runs, each OpCall
// opens a span when it starts, names its inputs in finish() and closes the span when it
// ends; graph/profiler.h turns the closed spans into events. When no profiler runs the hook
// is one relaxed load per op call.
#pragma once

#include <atomic>
#include <span>

#include "ug/core/tensor.h"
#include "ug/graph/op_def.h"

namespace ug::graph::profiling {

/** An op call being timed; defined in profiling.cpp. */
struct Span;

namespace detail {
extern std::atomic<bool> enabled;
}  // namespace detail

inline bool enabled() { return detail::enabled.load(std::memory_order_relaxed); }

Span* begin(const OpDef& def);
void set_inputs(Span* span, std::span<const Tensor* const> inputs);
void end(Span* span);

}  // namespace ug::graph::profiling
