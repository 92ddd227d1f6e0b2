// Capture: while a Capture is installed on this thread, every op call that is not nested in
// another op's call is recorded as (op, inputs, outputs, attributes). The ONNX exporter reads
// such a list today; the compiler reads the same one. Ops do not talk to it directly: their
// OpCall (op_call.h) records them.
//
// Nesting is what makes composites work: linear, layer_norm or an LSTM layer record once, and
// the ops they are built from stay inside them (CapturedCall::inner), out of the graph unless
// it needs them: a gradient reading a composite's intermediate, or a program running a
// composite that has no graph form of its own (batch_norm in training mode). Without a capture
// an op pays one test of a thread-local pointer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::graph {

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::string>;
using Attrs = std::vector<std::pair<std::string, AttrValue>>;

/** Runs a captured call again on new inputs (one per captured input): for ops with no graph
 *  form, which a compiled program calls back (an optimizer's fused update). */
using Replay = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/** One captured op call: an undefined input stands for an absent optional operand (a missing bias). */
struct CapturedCall {
  std::string op;
  std::vector<Tensor> inputs, outputs;
  Attrs attrs;
  /** The data versions (Tensor::version) of the inputs and outputs when the call was made: a
   *  value written in place later by code outside the op table is caught by comparing. */
  std::vector<uint32_t> input_versions, output_versions;
  Replay replay;  // empty for ops that have a graph form
  /** The calls the op made inside its own, in the order they were made. */
  std::vector<CapturedCall> inner;
  /** The user code's line that made the call (debugging::current_source), when the capture
   *  records sources; "" inside another call. */
  std::string where;
  /** For a call inside another: content_hash of each output when it was made. The op around
   *  it may write into it with a kernel, which no version counts. */
  std::vector<uint64_t> output_hashes;

  /** Whether output i was written into a tensor the call was given: an in-place op (its name
   *  ends in '_', or the output is one of its inputs). */
  bool writes_in_place(size_t i) const;
};

/** A hash of the memory t's elements span (never 0), or 0 where it cannot be read here (a
 *  batched tensor, another device). */
uint64_t content_hash(const Tensor& t);

/** Collects the calls of the ops that run on this thread while it lives (one per thread). */
class Capture {
 public:
  /** `who` names the consumer in errors ("onnx.export", "jit"). */
  explicit Capture(const char* who);
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  const std::vector<CapturedCall>& calls() const { return calls_; }
  /** The calls recorded so far inside each op call in progress (a vmap's body, a branch),
   *  outermost first: they come after calls() and before the calls in progress. */
  std::vector<const CapturedCall*> open_parts() const;
  /** Raises when an op ran other ops inside its call but did not record itself. */
  void check() const;
  /** From now on each call records the user code's line that made it (a program's trace:
   *  checks at run time name it). */
  void record_sources() { record_sources_ = true; }
  /** How many vmaps were open when the capture began: they batch the program's runs, not its
   *  graph, which holds its values as each example sees them. */
  size_t vmaps_outside() const { return vmaps_outside_; }
  /** For an in-place view op (t_, unsqueeze_) about to give t the layout of `view`, which the
   *  op's call made from t: the calls recorded so far read t's old layout through `old` (an
   *  alias of t made before the change), and `view`'s readers read t, at `version`. Recorded
   *  calls hold handles whose layout is read when the graph is built, after the trace. False,
   *  changing nothing, where no recorded call made t (an input of the trace or a constant). */
  bool relayout(const Tensor& t, const Tensor& old, const Tensor& view, uint32_t version);

 private:
  friend class OpCall;
  /** An op call in progress: the calls made inside it so far. */
  struct Open {
    std::vector<CapturedCall> inner;
    bool ran_ops = false;
    size_t recorded_at = 0;  // where the call went in its parent's list, once recorded
  };
  /** The list a call opened at `depth` records itself into. */
  std::vector<CapturedCall>& list_at(size_t depth) { return depth == 0 ? calls_ : open_[depth - 1].inner; }

  const char* who_;
  uint64_t grad_sets_at_start_;  // GradMode::sets_made() when the capture began
  std::vector<CapturedCall> calls_;
  std::vector<Open> open_;  // the calls in progress, outermost first
  std::string error_;
  bool record_sources_ = false;
  size_t vmaps_outside_;
  Capture* previous_;
};

namespace detail {
extern thread_local constinit Capture* current_capture;
}

}  // namespace ug::graph
