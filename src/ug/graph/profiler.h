// The op-level profiler's collector: start() makes every op call on every thread a span
// (graph/profiling.h), stop() returns them as events in the order they ended. The user-facing
// profiler (graph/profile.h: tables, Chrome traces; Python's ug.profiler) is built on these events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ug/core/dtype.h"
#include "ug/core/shape.h"

namespace ug::graph::profiling {

struct Options {
  bool record_shapes = false;   // input shapes and dtypes of each call
  bool profile_memory = false;  // net bytes allocated on the device during each call
  bool with_stack = false;      // the caller's source location (debugging::current_trace())
};

struct OpEvent {
  std::string name;
  bool user_range = false;  // a profiler::RecordFunction, not an op call
  int64_t start_ns = 0;     // steady clock, since start()
  int64_t end_ns = 0;
  uint64_t thread = 0;              // a small id per thread, in order of first appearance
  int depth = 0;                    // 0 for an op called by the user, 1 for an op it ran, ...
  std::vector<Shape> input_shapes;  // record_shapes; an absent optional input has rank -1: {-1}
  std::vector<DType> input_dtypes;
  int64_t bytes = 0;  // profile_memory: live bytes at the end minus at the start
  std::string stack;  // with_stack
};

/** Starts collecting; throws if a profiler already runs (they do not nest, as in PyTorch). */
void start(const Options& options);
/** Stops collecting and returns the events of every span that closed meanwhile. */
std::vector<OpEvent> stop();
bool running();

struct Span;
/** Opens a user range (profiler::RecordFunction) as an op call would; nullptr when no profiler
 *  runs. Closed by end() (graph/profiling.h). */
Span* begin_range(const std::string& name);

}  // namespace ug::graph::profiling
