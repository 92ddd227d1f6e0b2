// Export tracing. While a Tracer is installed on this thread, each op records one call (name,
// inputs, outputs, attributes) where the op is defined, next to its autograd::record:
//
//   const onnx::TracedOp kConv2d("conv2d");      // at namespace scope: registers the name
//   Tensor conv2d(...) {
//     onnx::TraceScope trace(kConv2d);           // first, before the op calls other ops
//     Tensor out = ...forward...;
//     if (trace) trace.record({x, w, b}, {out}, {{"strides", stride}});
//
// A scope opened inside another op's scope records nothing: a composite op (linear, layer_norm,
// an LSTM layer) records itself once and hides the ops it is built from. Without a tracer the
// scope costs one test of a thread-local pointer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::onnx {

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::string>;
using Attrs = std::vector<std::pair<std::string, AttrValue>>;

/** One traced op: an undefined input stands for an absent optional operand (a missing bias). */
struct TracedCall {
  std::string op;
  std::vector<Tensor> inputs, outputs;
  Attrs attrs;
};

/** The name of an op that can be traced. Constructed at namespace scope, it adds the name to
 *  traceable_ops(): the export table is checked against that list. */
class TracedOp {
 public:
  explicit TracedOp(const char* name);
  const char* name() const { return name_; }

 private:
  const char* name_;
};

/** Every name a TracedOp registered, sorted, without repeats. */
std::vector<std::string> traceable_ops();

/** Collects the calls of the ops that run on this thread while it lives (one per thread). */
class Tracer {
 public:
  Tracer();
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  const std::vector<TracedCall>& calls() const { return calls_; }
  /** Raises when an op ran other ops inside its scope but did not record itself. */
  void check() const;

 private:
  friend class TraceScope;
  std::vector<TracedCall> calls_;
  bool busy_ = false;        // a scope is open: scopes inside it record nothing
  int64_t hidden_ = 0;       // scopes opened inside the open one
  std::string error_;
  Tracer* previous_;
};

namespace detail {
extern thread_local constinit Tracer* current_tracer;
}

class TraceScope {
 public:
  explicit TraceScope(const TracedOp& op) {
    if (detail::current_tracer) [[unlikely]] enter(op);
  }
  ~TraceScope() {
    if (tracer_) leave();
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  /** True when this scope records: a tracer is active and no other op's scope is open. */
  explicit operator bool() const { return tracer_ != nullptr; }
  void record(std::vector<Tensor> inputs, std::vector<Tensor> outputs, Attrs attrs = {});

 private:
  void enter(const TracedOp& op);
  void leave();
  Tracer* tracer_ = nullptr;
  const TracedOp* op_ = nullptr;
  bool recorded_ = false;
};

}  // namespace ug::onnx
