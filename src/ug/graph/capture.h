// Capture: while a Capture is installed on this thread, every op call that is not nested in
// another op's call is recorded as (op, inputs, outputs, attributes). The ONNX exporter reads
// such a list today; the compiler reads the same one. Ops do not talk to it directly: their
// OpCall (op_call.h) records them.
//
// Nesting is what makes composites work: linear, layer_norm or an LSTM layer record once, and
// the ops they are built from stay hidden inside them. Without a capture an op pays one test
// of a thread-local pointer.
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
};

/** Collects the calls of the ops that run on this thread while it lives (one per thread). */
class Capture {
 public:
  /** `who` names the consumer in errors ("onnx.export", "jit"). */
  explicit Capture(const char* who);
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  const std::vector<CapturedCall>& calls() const { return calls_; }
  /** Raises when an op ran other ops inside its call but did not record itself. */
  void check() const;

 private:
  friend class OpCall;
  const char* who_;
  std::vector<CapturedCall> calls_;
  bool busy_ = false;   // an op call is open: calls inside it record nothing
  int64_t hidden_ = 0;  // calls opened inside the open one
  std::string error_;
  Capture* previous_;
};

namespace detail {
extern thread_local constinit Capture* current_capture;
}

}  // namespace ug::graph
