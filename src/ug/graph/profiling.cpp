#include "ug/graph/profiling.h"

#include <chrono>
#include <deque>
#include <mutex>

#include "ug/core/allocator.h"
#include "ug/core/error.h"
#include "ug/graph/debugging.h"
#include "ug/graph/profiler.h"

namespace ug::graph::profiling {

namespace detail {
std::atomic<bool> enabled{false};
}  // namespace detail

struct Span {
  OpEvent event;
  Options options;  // the profiler's, as it began: a later start() may change them
  int64_t live_at_start = 0;
};

namespace {

using Clock = std::chrono::steady_clock;

struct Collector {
  std::mutex mutex;
  bool running = false;
  Options options;
  Clock::time_point origin;
  std::vector<OpEvent> events;
  uint64_t next_thread = 0;
};

Collector& collector() {
  static Collector c;
  return c;
}

/** Open spans of this thread, innermost last: a deque keeps their addresses while it grows. */
thread_local std::deque<Span> open_spans;
thread_local uint64_t thread_id = ~uint64_t{0};

int64_t since_origin(const Collector& c) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - c.origin).count();
}

int64_t live_bytes() { return allocator_for(Device{}).stats().allocated; }

Span* open_span(std::string name, bool user_range) {
  Collector& c = collector();
  Options options;
  {
    std::lock_guard lock(c.mutex);
    if (!c.running) return nullptr;  // stopped between the flag test and here
    options = c.options;
    if (thread_id == ~uint64_t{0}) thread_id = c.next_thread++;
  }
  Span& s = open_spans.emplace_back();
  s.options = options;
  s.event.name = std::move(name);
  s.event.user_range = user_range;
  s.event.thread = thread_id;
  s.event.depth = static_cast<int>(open_spans.size()) - 1;
  if (options.with_stack) s.event.stack = debugging::current_trace();
  if (options.profile_memory) s.live_at_start = live_bytes();
  s.event.start_ns = since_origin(c);
  return &s;
}

}  // namespace

Span* begin(const OpDef& def) { return open_span(def.name(), false); }

Span* begin_range(const std::string& name) { return open_span(name, true); }

void set_inputs(Span* span, std::span<const Tensor* const> inputs) {
  if (!span->options.record_shapes) return;
  for (const Tensor* t : inputs) {
    const bool present = t && t->defined();
    span->event.input_shapes.push_back(present ? t->shape() : Shape{-1});
    span->event.input_dtypes.push_back(present ? t->dtype() : DType::Float32);
  }
}

void end(Span* span) {
  Collector& c = collector();
  span->event.end_ns = since_origin(c);
  if (span->options.profile_memory) span->event.bytes = live_bytes() - span->live_at_start;
  {
    std::lock_guard lock(c.mutex);
    if (c.running) c.events.push_back(std::move(span->event));
  }
  // Spans close innermost first, so this one is the last open.
  open_spans.pop_back();
}

void start(const Options& options) {
  Collector& c = collector();
  std::lock_guard lock(c.mutex);
  if (c.running) fail<RuntimeError>("[profiler] a profiler is already running; profilers do not nest");
  c.running = true;
  c.options = options;
  c.origin = Clock::now();
  c.events.clear();
  detail::enabled.store(true, std::memory_order_relaxed);
}

std::vector<OpEvent> stop() {
  Collector& c = collector();
  std::lock_guard lock(c.mutex);
  c.running = false;
  detail::enabled.store(false, std::memory_order_relaxed);
  return std::move(c.events);
}

bool running() {
  Collector& c = collector();
  std::lock_guard lock(c.mutex);
  return c.running;
}

}  // namespace ug::graph::profiling
