// A compiled program: a function traced once into a graph of the ops in the op table, then run
// from that graph (docs/design.md, "Compiled mode"). The trace is the capture the ONNX
// exporter reads (ug/graph/capture.h), so the graph a Program runs is the one
// ug::onnx::export_function would write, and save() writes exactly that.
//
//   auto step = ug::compiler::Program::trace(f, {x, y});   // runs f once, recording its ops
//   std::vector<ug::Tensor> out = step({x2, y2});            // runs the graph; f is not called
//
// Running a program calls the ops in order from C++ (no Python, no re-trace); autograd records
// through it as through eager code, so grad(jit(f)) works. A value read for the last time is
// freed at once (the graph's liveness plan).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ug/compiler/simplify.h"
#include "ug/core/tensor.h"

namespace ug::graph {
class Capture;
}  // namespace ug::graph

namespace ug::onnx {
struct Graph;
struct ProgramTrace;
}  // namespace ug::onnx

namespace ug::compiler {

using Function = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Program {
 public:
  /** Traces fn on example inputs (it runs once, without grad). Tensors of `state` (a module's
   *  parameters and buffers) are read as they are at each run; any other tensor fn reads but
   *  was not given becomes a constant of the program, as in jax.jit. */
  static Program trace(const Function& fn, const std::vector<Tensor>& example_inputs, const NamedTensors& state = {});
  /** trace, also giving what the traced run returned: a function that writes state (a
   *  PyTorch-style step) has taken its first step while traced, so its first call's result
   *  is that run's, not a second run's. With `free_sizes` (reduce_retracing's traces) the graph
   *  reads the sizes it needs from its inputs' shapes where it can (onnx::trace_program), so
   *  that generalize can find two traces at other sizes the same. */
  static std::pair<Program, std::vector<Tensor>> trace_with_outputs(const Function& fn,
                                                                    const std::vector<Tensor>& example_inputs,
                                                                    const NamedTensors& state = {},
                                                                    bool free_sizes = false);

  /** Runs the graph on inputs of the traced dtypes and shapes (any size in any_size_dims). */
  /** Taken by value: a caller that moves its inputs in hands their buffers to the run, which
   *  may then write its results into them (jit's donate_argnums). */
  std::vector<Tensor> operator()(std::vector<Tensor> inputs) const;

  /** tf.function's reduce_retracing: a and b are one function traced at two shapes. When they
   *  are the same graph apart from their inputs' sizes, nothing in the program depends on the
   *  dims where those differ (no constant, attribute or called-back op made from a size, no
   *  Python read of a traced tensor's shape, no op's constant made from a size that differs
   *  between the traces: graph::note_size_read), and the program runs on any size there: b, with
   *  those dims (and a's) in any_size_dims. Otherwise nullopt, and *why says what depends on a
   *  size. (Sizes a Python function reads and uses in ways that happen to agree at both shapes
   *  are the one case this cannot see; it refuses any shape read to stay clear of them.) */
  static std::optional<Program> generalize(const Program& a, const Program& b, std::string* why);
  /** For each input, the dims whose size the graph reads from the input's shape (a trace with
   *  free sizes takes a size from any input dim of that size: the cache then runs the program
   *  only where the dims of equal sizes in its traces are equal). */
  std::vector<std::vector<bool>> read_dims() const;
  /** For each input, the dims that take any size (none, unless generalized). */
  const std::vector<std::vector<bool>>& any_size_dims() const { return *any_size_; }
  /** Where the traced function first read the shape of a traced tensor from Python ("" if it
   *  never did). */
  const std::string& shape_read_at() const { return shape_read_at_; }

  size_t num_inputs() const;
  size_t num_outputs() const;
  /** Whether a run writes state besides returning values: parameters, optimizer state or
   *  .grad (a PyTorch-style step, functionalised: the graph reads them live and a run writes
   *  them back), or buffers (BatchNorm's running statistics). A program that writes
   *  parameters or .grad holds a training step and runs without recording autograd. An
   *  argument the function writes in place is written back into the caller's tensor. */
  bool writes_state() const { return !writes_->empty() || !grad_writes_->empty() || !input_writes_->empty(); }
  /** Parameters whose .grad from before the call an optimizer's step in the program reads (a
   *  compiled update after an eager backward): the step updates those that have one, so the
   *  caller keys the program by which of them do. */
  const std::vector<Tensor>& outside_grads() const { return *outside_grads_; }
  /** Why the program no longer computes what the function would ("" while it does): a tensor
   *  the function closes over, which the program holds as a constant, was written in place
   *  since the trace (torch-style state kept outside a module). The cache traces again. */
  std::string stale() const;
  /** The constants stale() finds written. */
  std::vector<Tensor> written_constants() const;
  /** What the passes over the traced graph did (simplify.h). */
  const SimplifyStats& stats() const { return stats_; }
  /** The graph's node types, in the order they run. */
  std::vector<std::string> node_types() const;
  /** The graph as text (onnx::to_text): as traced and simplified, what save() writes, or with
   *  `as_run` as it runs, its elementwise chains fused and its updates applied. */
  std::string text(bool as_run = false) const;
  /** The program as a serialized ONNX ModelProto, holding its initializers' data. */
  std::string onnx_bytes() const;
  /** The ops the program calls back (UgReplay nodes: an op without an ONNX form, or one whose
   *  program form is a call back, an optimizer's update, a fused backward kernel), sorted, each
   *  once: what a file cannot hold. */
  std::vector<std::string> called_back() const;
  /** Writes onnx_bytes() to a file that ug::onnx::load, `ug serve` and ONNX Runtime read;
   *  raises where called_back() names an op. */
  void save(const std::string& path) const;

 private:
  Program() = default;
  /** The program of a trace (onnx::trace_program), which read shapes at `shape_read_at` and in
   *  which ops made constants from the sizes `size_reads` (graph::SizeReads). */
  static Program from_trace(onnx::ProgramTrace traced, const NamedTensors& state, const std::string& shape_read_at,
                            const std::vector<std::pair<std::string, int64_t>>& size_reads);
  /** Whether autograd would record through a run on these inputs. */
  bool records(const std::vector<Tensor>& inputs) const;
  /** The program runs that autograd records through or that carry tangents take when the
   *  trace made custom derivatives' calls: it calls them back, linking their rules (null
   *  otherwise). */
  std::shared_ptr<const Program> replaying_;
  std::shared_ptr<const onnx::Graph> graph_;
  // graph_ before rematerialize copied nodes, run when autograd records (null: none copied)
  std::shared_ptr<const onnx::Graph> recording_graph_;
  // graph_ with its elementwise chains fused and its updates applied (fuse.h), run when autograd
  // does not record (null: nothing changed); graph_ stays what save() writes and node_types() lists
  std::shared_ptr<const onnx::Graph> fused_graph_;
  // the model without the data of the initializers it holds as tensors (onnx::ProgramTrace::held)
  std::shared_ptr<const std::string> bytes_;
  std::shared_ptr<const std::vector<std::pair<std::string, Tensor>>> held_;
  // Shared, as a cache hands out copies of programs:
  // initializer value id -> its live tensor
  std::shared_ptr<const std::vector<std::pair<int64_t, Tensor>>> state_;
  // initializer value id -> the leaf whose .grad (zeros where it has none) it is at each run
  std::shared_ptr<const std::vector<std::pair<int64_t, Tensor>>> grad_sources_;
  // a tensor the graph holds as a constant -> its version when traced (see stale())
  std::shared_ptr<const std::vector<std::pair<Tensor, uint32_t>>> constants_read_;
  // graph output index -> the tensor it is copied into / the leaf whose .grad it becomes (-1: none)
  std::shared_ptr<const std::vector<std::pair<Tensor, int64_t>>> writes_, grad_writes_;
  // input index -> the graph output holding its new value (an argument written in place)
  std::shared_ptr<const std::vector<std::pair<size_t, int64_t>>> input_writes_;
  std::shared_ptr<const std::vector<Tensor>> outside_grads_;        // see outside_grads()
  std::shared_ptr<const std::vector<std::vector<bool>>> any_size_;  // by input, by dim
  std::string shape_read_at_;
  std::vector<std::pair<std::string, int64_t>> size_reads_;  // (op, size) it made constants from
  size_t num_results_ = 0;                                   // the function's own outputs, before the writes
  bool holds_step_ = false;                                  // it writes parameters or .grad
  SimplifyStats stats_;
};

struct TraceState;

/** While alive on this thread, with ops being recorded: tensors computed from `inputs` (or a
 *  random draw, or an in-place write) are traced values, which the graph recomputes at every
 *  run, so Python control flow on them raises instead of freezing the example's branch into the
 *  graph, and ug.cond selects instead of branching. Program::trace opens one (`who` "jit"), as
 *  does ug.onnx.export ("onnx.export"). */
class TracedValuesScope {
 public:
  TracedValuesScope(const std::vector<Tensor>& inputs, const char* who);
  ~TracedValuesScope();
  TracedValuesScope(const TracedValuesScope&) = delete;
  TracedValuesScope& operator=(const TracedValuesScope&) = delete;
  /** Where the function first read a traced tensor's shape from Python ("": never). */
  const std::string& shape_read_at() const;

 private:
  std::unique_ptr<TraceState> state_;
  TraceState* previous_;
};

/** True inside a TracedValuesScope when t holds a traced value: one the recorded calls made,
 *  or the calls recorded so far inside a call in progress (a vmap's body, which a Python branch
 *  must not read either). */
bool is_traced(const Tensor& t);

/** Python read the shape of a traced tensor at `where` (file:line): a program that depends on
 *  it cannot be generalized to other sizes (Program::generalize). */
void note_shape_read(const std::string& where);

/** While alive inside a trace: a loop's body or condition is traced once, on stand-ins of its
 *  carry, inside the loop's own call, and is_traced says yes for every tensor, so that Python
 *  control flow there takes the compiled path or raises, never branching on a stand-in's
 *  numbers (ug::while_loop). Outside a trace (the loop run for the trace's result) it does
 *  nothing. */
class LoopBodyScope {
 public:
  LoopBodyScope();
  ~LoopBodyScope();
  LoopBodyScope(const LoopBodyScope&) = delete;
  LoopBodyScope& operator=(const LoopBodyScope&) = delete;

 private:
  bool active_;
};

/** Whether a loop's body or condition is being traced now, on stand-ins of its carry. */
bool tracing_loop_body();

/** While alive, this thread is outside any trace: ops are not recorded and no tensor is a
 *  traced value, so a debug callback called while its program is traced sees that trace's
 *  values as plain tensors (item() works) and adds nothing to the graph. */
class OutsideTrace {
 public:
  OutsideTrace();
  ~OutsideTrace();
  OutsideTrace(const OutsideTrace&) = delete;
  OutsideTrace& operator=(const OutsideTrace&) = delete;

 private:
  TraceState* trace_;
  graph::Capture* capture_;
  void (*hook_)(const Tensor&);
};

/** Raises a TypeError when t is_traced: Python control flow on it (`what` is "bool()",
 *  "item()", ...) would freeze one trace's value into the program. `where` is the caller's
 *  source location, for the message. */
void check_concrete(const Tensor& t, const char* what, const std::string& where = "");

}  // namespace ug::compiler
