// One op call's record. Every op body is written inside one:
//
//   const graph::OpDef kExp("exp");                  // at namespace scope: the op's name, once
//   Tensor exp(const Tensor& x) {
//     graph::OpCall call(kExp);                      // first, before the op calls other ops
//     Tensor y = ...forward, or the batching rule...;
//     call.finish({&x}, {&y}, {graph::output(y)},
//                 [](Saved saved, Tensors&& g) { return Tensors{g[0] * saved[0]}; },  // vjp
//                 [&](const Tensors& t) { return Tensors{t[0] * y}; });                       // jvp
//     return y;
//   }
//
// finish() hands the call to every party that wants it, always in this order:
//   1. numerics: with check_numerics on, a NaN or Inf in a floating output raises, naming the op
//      (batched outputs are checked by the physical call inside the batching rule);
//   2. capture: the call (op, inputs, outputs, attributes) joins the active Capture, for the
//      ONNX exporter and the compiler (inside another op's call: among that call's parts);
//   3. forward mode: for every open jvp level at which an input has a tangent, the jvp rule
//      gives the outputs' tangents;
//   4. reverse mode: when grad mode is on and an input requires grad, a node holding the vjp
//      rule and the saved tensors becomes the floating outputs' grad_fn.
// A running profiler (graph/profiling.h) times the whole call and reads its inputs in finish().
// Parts 3 and 4 build nothing unless they run, so an op call costs a few flag tests when no
// transform is active. The vjp and jvp rules are written with ops: a rule run under an
// active transform records itself, which is how higher derivatives and jvp-of-vjp work.
#pragma once

#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "ug/core/allocator.h"
#include "ug/graph/debugging.h"
#include "ug/graph/forward.h"
#include "ug/graph/record.h"
#include "ug/core/batching.h"
#include "ug/graph/capture.h"
#include "ug/graph/op_def.h"
#include "ug/graph/profiling.h"

namespace ug::graph {

using Tensors = std::vector<Tensor>;
using ug::Saved;

/** The rule an op without a derivative (or a composite that records none) gives. */
struct NoRule {};

/** A list finish() reads during the call: a braced list ({&a, &b}) or a vector, for ops
 *  whose operand count varies (cat, the recurrent layers). Holds no copy. */
template <class T> class List {
 public:
  List(std::initializer_list<T> l) : items_(l.begin(), l.size()) {}
  List(const std::vector<T>& v) : items_(v) {}
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + items_.size(); }
  size_t size() const { return items_.size(); }
  std::span<const T> span() const { return items_; }

 private:
  std::span<const T> items_;
};
using Inputs = List<const Tensor*>;
using Outputs = List<const Tensor*>;
using Saves = List<Save>;

/** Whether a replay's closure holds a size of the call it was made at (OpCall::set_replay). */
enum class ReplaySizes { Held, None };

class OpCall {
 public:
  explicit OpCall(const OpDef& def) : def_(def), outer_op_(ug::detail::current_op) {
    ug::detail::current_op = def.name();
    if (detail::current_capture) [[unlikely]]
      enter();
    if (profiling::enabled()) [[unlikely]]
      span_ = profiling::begin(def);
  }
  ~OpCall() {
    if (capture_) leave();
    if (span_) [[unlikely]]
      profiling::end(span_);
    ug::detail::current_op = outer_op_;
  }
  OpCall(const OpCall&) = delete;
  OpCall& operator=(const OpCall&) = delete;

  const OpDef& def() const { return def_; }
  /** True when this call is captured: building attributes is worth it only then. */
  bool capturing() const { return capture_ != nullptr; }

  /** Attributes of the call for the capture, set before finish() (only when capturing()). */
  void set_attrs(Attrs attrs) { attrs_ = std::move(attrs); }
  /** How to run the call again on new inputs, for an op without a graph form (only when
   *  capturing()): a compiled program calls it back. `sizes`: whether the closure holds a size
   *  of this call (a shape, a row length); a program generalized over sizes (tf.function's
   *  reduce_retracing) calls back only closures that hold none. */
  void set_replay(Replay replay, ReplaySizes sizes = ReplaySizes::Held) {
    replay_ = std::move(replay);
    replay_sizes_ = sizes;
  }

  /** A call without derivative rules: integer results, or a composite whose inner ops record
   *  their own derivatives. */
  void finish(Inputs inputs, Outputs outputs) { finish(inputs, outputs, {}, NoRule{}, NoRule{}); }

  /** vjp(Saved saved, Tensors&& output_grads) -> one gradient per input (undefined:
   *  none), with the saved tensors unpacked in the order given; jvp(const Tensors& tangents)
   *  -> one tangent per output, from one per input (undefined where an input has none).
   *  Either may be NoRule. A vjp whose captures cost something to build (shapes, index
   *  lists) is given as a maker, `[&] { return [captures](Saved s, Tensors&& g) {...}; }`, run
   *  only when a node is recorded, so that a call without gradients never builds them. */
  template <class Vjp, class Jvp> void finish(Inputs inputs, Outputs outputs, Saves saved, Vjp&& vjp, Jvp&& jvp) {
    check_numerics(outputs);
    if (span_) [[unlikely]]
      profiling::set_inputs(span_, inputs.span());
    if (capture_) record_capture(inputs, outputs);
    // The node before the tangents: a forward rule that reads an output (exp's t * out) then
    // records its dependence on the inputs through that output's node, which reverse mode over
    // forward mode (a gradient of a jvp) differentiates. The outputs the node saved take their
    // tangents after, for forward mode over reverse mode (a Hessian as jacfwd of jacrev).
    std::vector<SavedTensor>* kept = nullptr;
    if constexpr (!std::is_same_v<std::decay_t<Vjp>, NoRule>) {
      if (any_floating(outputs) && needs_grad(inputs)) {
        if constexpr (std::is_invocable_v<Vjp&>) kept = &record_node(inputs, outputs, saved, vjp());
        else kept = &record_node(inputs, outputs, saved, std::forward<Vjp>(vjp));
      }
    }
    if constexpr (!std::is_same_v<std::decay_t<Jvp>, NoRule>) {
      if (forward::active()) [[unlikely]] {
        propagate_tangents(inputs, outputs, jvp);
        if (kept) give_saved_outputs_tangents(*kept, saved);
      }
    }
  }

 private:
  void enter();
  void leave();
  void record_capture(Inputs inputs, Outputs outputs);
  void check_numerics(Outputs outputs) const {
    if (debugging::check_numerics_enabled()) [[unlikely]]
      for (const Tensor* out : outputs)
        if (out->defined() && !batching::level(*out)) debugging::check_output(*out, def_.name());
  }
  static bool any_floating(Outputs outputs) {
    for (const Tensor* out : outputs)
      if (is_inexact(out->dtype())) return true;
    return false;
  }
  static bool needs_grad(Inputs inputs) {
    if (!GradMode::is_enabled()) return false;
    for (const Tensor* t : inputs)
      if (t && t->defined() && autograd::requires_grad(*t)) return true;
    return false;
  }

  template <class Jvp> static void propagate_tangents(Inputs inputs, Outputs outputs, Jvp& jvp) {
    forward::propagate(std::vector<const Tensor*>(inputs.begin(), inputs.end()),
                       std::vector<const Tensor*>(outputs.begin(), outputs.end()), jvp);
  }

  template <class Vjp> std::vector<SavedTensor>& record_node(Inputs inputs, Outputs outputs, Saves saved, Vjp&& vjp) {
    return autograd::record(def_.name(), inputs.span(), outputs.span(), saved.span(), std::forward<Vjp>(vjp));
  }
  static void give_saved_outputs_tangents(std::vector<SavedTensor>& kept, Saves saved) {
    for (size_t i = 0; i < kept.size(); ++i)
      if (saved.span()[i].is_output) kept[i].take_tangents(*saved.span()[i].tensor);
  }

  const OpDef& def_;
  const char* outer_op_;
  Capture* capture_ = nullptr;
  size_t depth_ = 0;  // how many captured calls are open around this one
  profiling::Span* span_ = nullptr;
  bool recorded_ = false;
  Attrs attrs_;
  Replay replay_;
  ReplaySizes replay_sizes_ = ReplaySizes::Held;
};

}  // namespace ug::graph
