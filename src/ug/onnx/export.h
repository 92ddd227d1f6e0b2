// ONNX export by tracing: the model runs once on example inputs (eval mode, no grad) while
// every op call is captured (ug/graph/capture.h); the export table (export_table.cpp) turns each recorded
// op into ONNX nodes. Parameters and buffers become initializers under their state_dict names.
//
//   ug::onnx::export_model(model, {x}, "model.onnx",
//                          {.input_names = {"x"}, .output_names = {"y"},
//                           .dynamic_axes = {{"x", {{0, "batch"}}}, {"y", {{0, "batch"}}}}});
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/graph/capture.h"
#include "ug/nn/module.h"

namespace ug::onnx {

struct ExportOptions {
  /** Names of the graph inputs and outputs; missing ones are input_0, ... and output_0, .... */
  std::vector<std::string> input_names, output_names;
  /** Per input or output name: the dims that are symbolic, with their names ({0: "batch"}). */
  std::map<std::string, std::map<int64_t, std::string>> dynamic_axes;
  /** The default ONNX opset; 13 to 20 are accepted. */
  int opset_version = 17;
};

/** Exports `model` traced on `example_inputs` (its one-tensor forward) to an .onnx file. The
 *  model runs in eval mode without grad; each module's training mode is restored afterwards. */
void export_model(nn::Module& model, const std::vector<Tensor>& example_inputs, const std::string& path,
                  const ExportOptions& options = {});

using TracedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/** The lower-level entry: traces `fn` on `example_inputs` (without grad) and writes the graph;
 *  tensors of `named_tensors` (parameters and buffers) become initializers of those names. */
void export_function(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
                     const std::vector<std::pair<std::string, Tensor>>& named_tensors, const std::string& path,
                     const ExportOptions& options = {});

/** A trace as the compiler takes it (ug/compiler/program.h): the graph export_function would
 *  write, except that tensors fn reads that are live state but are not named (they require
 *  grad, or the trace writes them) become initializers param_N (read live by the program),
 *  ops without a graph form that can replay themselves (an optimizer's fused update) become
 *  UgReplay nodes calling them back, and composites without a graph form of their own are
 *  emitted as their parts. */
struct ProgramTrace {
  std::string bytes;                                        // the serialized ModelProto
  std::vector<std::pair<std::string, Tensor>> live_leaves;  // closed-over state, named by the trace
  /** Tensors no op of the trace made, read as constants (GraphBuilder::constant_sources). */
  std::vector<std::pair<std::string, Tensor>> constant_sources;
  /** The tensors `bytes` names at kHeldLocation instead of holding their data (GraphBuilder::held). */
  std::vector<std::pair<std::string, Tensor>> held;
  std::vector<graph::Replay> replays;  // by the UgReplay nodes' "index"
  /** What the traced run itself returned (it ran the function for real). */
  std::vector<Tensor> outputs;
  /** State the function wrote, each after the function's outputs in the graph's outputs: a
   *  parameter or state tensor with the output holding its new value; a leaf with the output
   *  holding its new .grad (-1: none, zero_grad cleared it). */
  std::vector<std::pair<Tensor, int64_t>> state_writes, grad_writes;
  /** Arguments the function wrote in place: (input index, the output holding its new value). */
  std::vector<std::pair<size_t, int64_t>> input_writes;
  /** Constants standing for a leaf's .grad as it is when the program runs (grad_trace.h). */
  std::vector<std::pair<std::string, Tensor>> grad_sources;
  /** Leaves whose .grad, as it was before the function ran, an optimizer's step read (a
   *  compiled update after an eager backward): which have a .grad decides what the step does. */
  std::vector<Tensor> outside_grads;
  /** The bytes of the traced tensors, by value name (GraphBuilder::value_bytes). */
  std::unordered_map<std::string, int64_t> value_bytes;
  /** The buffer each traced tensor is in, by value name (GraphBuilder::value_buffers). */
  std::unordered_map<std::string, const void*> value_buffers;
  /** When the trace made custom derivatives' calls (autograd/custom_function.h): the same
   *  trace with those calls called back, for runs that autograd records through. */
  std::shared_ptr<ProgramTrace> replaying_custom;
};
/** With `free_sizes` (reduce_retracing's traces), sizes the rules would write as constants are
 *  read from the inputs' shapes where an input has a dim of that size (GraphBuilder::free_sizes),
 *  so that two traces at other sizes can be the same graph. */
ProgramTrace trace_program(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
                           const std::vector<std::pair<std::string, Tensor>>& named_tensors, bool free_sizes = false);

/** A program's serialized model with the data of its held initializers written in (`held`: the
 *  trace's ProgramTrace::held), as a file or another process needs it. */
std::string with_held_data(const std::string& bytes, const std::vector<std::pair<std::string, Tensor>>& held);

/** A program's serialized model as a file holds it: with_held_data's, and its stop_gradient
 *  nodes (called back in the program, which autograd may record through) become Identity, the
 *  value itself. */
std::string file_form(const std::string& bytes, const std::vector<std::pair<std::string, Tensor>>& held);

/** A program's serialized model with the dims marked in `inputs` / `outputs` (by graph input,
 *  then dim) made symbolic ("<name>_dim<d>"): a program reduce_retracing made for any size
 *  there, as a file ONNX Runtime runs at other sizes. */
std::string with_symbolic_dims(const std::string& bytes, const std::vector<std::vector<bool>>& inputs,
                               const std::vector<std::vector<bool>>& outputs);

/** Puts a model and all its submodules in eval mode; gives each its own mode back on exit. */
class EvalModeGuard {
 public:
  explicit EvalModeGuard(nn::Module& model);
  ~EvalModeGuard();
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  std::vector<std::pair<std::shared_ptr<nn::Module>, bool>> modes_;
};

/** The op names the export table maps to ONNX, and those it rejects on purpose. */
std::vector<std::string> exportable_ops();
std::vector<std::string> unsupported_ops();

}  // namespace ug::onnx
