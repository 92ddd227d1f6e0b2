#include "ug/onnx/export.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <unordered_map>

#include "ug/autograd/grad_trace.h"
#include "ug/graph/grad_mode.h"
#include "ug/core/error.h"
#include "ug/onnx/export_table.h"
#include "ug/onnx/graph_builder.h"
#include "ug/version.h"

namespace ug::onnx {

namespace {

constexpr int64_t kIrVersion = 8;
constexpr int kMinOpset = 13, kMaxOpset = 20;

std::vector<std::string> names_or_default(const std::vector<std::string>& given, size_t count, const char* prefix,
                                          const char* what) {
  if (given.size() > count) fail("[onnx.export] ", given.size(), " ", what, " names given for ", count, " ", what, "s");
  std::vector<std::string> names = given;
  for (size_t i = names.size(); i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

/** The dim names of a graph input or output from dynamic_axes ("" for a fixed dim). */
std::vector<std::string> dim_names(const ExportOptions& options, const std::string& name, const Tensor& t) {
  std::vector<std::string> dims(static_cast<size_t>(t.dim()));
  auto it = options.dynamic_axes.find(name);
  if (it == options.dynamic_axes.end()) return dims;
  for (const auto& [axis, symbol] : it->second) {
    const int64_t d = axis < 0 ? axis + t.dim() : axis;
    if (d < 0 || d >= t.dim()) fail("[onnx.export] dynamic_axes: '", name, "' has ", t.dim(), " dims, got axis ", axis);
    dims[d] = symbol.empty() ? name + "_dim_" + std::to_string(d) : symbol;
  }
  return dims;
}

void check_options(const ExportOptions& options, const std::vector<std::string>& inputs,
                   const std::vector<std::string>& outputs) {
  if (options.opset_version < kMinOpset || options.opset_version > kMaxOpset)
    fail("[onnx.export] opset_version must be between ", kMinOpset, " and ", kMaxOpset, ", got ",
         options.opset_version);
  std::set<std::string> known(inputs.begin(), inputs.end());
  known.insert(outputs.begin(), outputs.end());
  if (known.size() != inputs.size() + outputs.size()) fail("[onnx.export] input and output names must be distinct");
  for (const auto& [name, axes] : options.dynamic_axes)
    if (!known.contains(name)) fail("[onnx.export] dynamic_axes names '", name, "', which is no input or output");
}

/** Whether a call can become nodes: by its rule, or in a program (not a file) by calling it
 *  back (an op without a graph form that replays itself). */
bool emittable(const GraphBuilder& g, const CapturedCall& call) {
  return exports(call.op) || (g.replays_allowed() && call.replay);
}

void emit_call(GraphBuilder& g, const CapturedCall& call) {
  // A part (emitted for the call that reads it) keeps the reader's line.
  GraphBuilder::SourceScope source(g, call.where);
  const bool reader_without_grad = g.is_reading_without_grad();
  g.reading_without_grad(has_attr(call, "no_grad"));
  g.check_inputs(call);
  if (g.writes_batched(call)) {
    g.emit_parts(call);
    g.bind_batched_outputs(call);
  } else if (!exports(call.op) && call.replay && g.replays_allowed()) {
    g.replay(call);
  } else {
    emit(g, call);
  }
  g.check_outputs(call);
  g.reading_without_grad(reader_without_grad);  // a part returns to the call that reads it
}

/** Whether the call is a custom derivative's or holds one among its parts. */
bool calls_custom_function(const CapturedCall& call) {
  return call.op == "custom_function" || std::ranges::any_of(call.inner, calls_custom_function);
}

/** Traces fn and builds its graph; with `program`, as trace_program does (see export.h). */
std::string trace(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
                  const std::vector<std::pair<std::string, Tensor>>& named_tensors, const ExportOptions& options,
                  ProgramTrace* program, bool free_sizes = false) {
  for (const Tensor& t : example_inputs)
    if (!t.defined()) fail("[onnx.export] example inputs must be defined tensors");
  const std::vector<std::string> input_names =
      names_or_default(options.input_names, example_inputs.size(), "input_", "input");

  std::vector<Tensor> outputs;
  std::vector<CapturedCall> calls;
  std::vector<uint32_t> start_versions;
  // A program's trace keeps the caller's grad mode, so a PyTorch-style step's backward() has
  // a graph to walk; the .grad it writes is followed by grad_trace.
  std::optional<autograd::GradTrace> grad_trace;
  if (program) grad_trace.emplace();
  {
    std::optional<NoGradGuard> no_grad;
    if (!program) no_grad.emplace();
    graph::Capture capture(program ? "jit" : "onnx.export");
    if (program) capture.record_sources();
    for (const Tensor& t : example_inputs) start_versions.push_back(t.version());
    outputs = fn(example_inputs);
    capture.check();
    calls = capture.calls();
  }
  if (outputs.empty() && !program) fail("[onnx.export] the model returned no tensors");
  const std::vector<std::string> output_names =
      names_or_default(options.output_names, outputs.size(), "output_", "output");
  check_options(options, input_names, output_names);

  // The graph of the calls; into `p` (a program's) what a program needs beside it.
  auto build = [&](ProgramTrace* p, bool replay_custom_calls) {
    ::onnx::ModelProto model;
    model.set_ir_version(kIrVersion);
    model.set_producer_name("unigrad");
    model.set_producer_version(version());
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(options.opset_version);
    ::onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("unigrad");

    GraphBuilder g(graph, options.opset_version, named_tensors);
    if (p) {
      // A training step (it wrote .grad) runs without recording: nothing to stop there.
      if (grad_trace->touched().empty()) g.stop_no_grad_results();
      g.name_live_leaves();
      g.allow_replays();
      if (replay_custom_calls) g.replay_custom_calls();
      if (free_sizes) g.free_sizes();
    }
    g.set_emitter(emit_call, emittable);
    for (size_t i = 0; i < example_inputs.size(); ++i)
      g.add_input(example_inputs[i], input_names[i], dim_names(options, input_names[i], example_inputs[i]),
                  start_versions[i]);
    g.note_calls(calls);
    for (const CapturedCall& call : calls) g.emit_call(call);
    for (size_t i = 0; i < outputs.size(); ++i)
      g.add_output(outputs[i], output_names[i], dim_names(options, output_names[i], outputs[i]));
    if (p) {
      g.reading_without_grad(true);  // state is written back under no_grad
      int64_t index = static_cast<int64_t>(outputs.size());
      for (const auto& [t, name] : g.written_state()) {
        g.add_output(t, "ug_state_" + std::to_string(index), {});
        p->state_writes.emplace_back(t, index++);
      }
      for (const Tensor& leaf : grad_trace->touched()) {
        const Tensor grad = leaf.grad();
        if (grad.defined()) g.add_output(grad, "ug_grad_" + std::to_string(index), {});
        p->grad_writes.emplace_back(leaf, grad.defined() ? index++ : -1);
      }
      // An argument written in place (x.add_(1) on an input): the caller's tensor takes the
      // new value after each run, as it does eagerly.
      for (size_t i = 0; i < example_inputs.size(); ++i)
        if (example_inputs[i].version() != start_versions[i]) {
          g.add_output(example_inputs[i], "ug_input_" + std::to_string(index), {});
          p->input_writes.emplace_back(i, index++);
        }
      if (index == 0)
        fail(
            "[jit] the function returns no tensors and writes no state (parameters, buffers, .grad or its "
            "arguments): a program of it would compute nothing; return what it computes");
      for (const auto& [placeholder, leaf] : grad_trace->incoming())
        if (auto name = g.constant_name(placeholder)) p->grad_sources.emplace_back(*name, leaf);
      for (const auto& [placeholder, leaf] : grad_trace->read_by_steps())
        if (auto name = g.constant_name(placeholder)) {
          p->grad_sources.emplace_back(*name, leaf);
          p->outside_grads.push_back(leaf);
        }
      p->live_leaves = g.live_leaves();
      p->constant_sources = g.constant_sources();
      p->held = g.held();
      p->replays = g.replays();
      p->outputs = outputs;
      p->value_bytes = g.value_bytes();
      p->value_buffers = g.value_buffers();
    }
    return model.SerializeAsString();
  };
  std::string bytes = build(program, false);
  if (program && std::ranges::any_of(calls, calls_custom_function)) {
    program->replaying_custom = std::make_shared<ProgramTrace>();
    program->replaying_custom->bytes = build(program->replaying_custom.get(), true);
  }
  return bytes;
}

}  // namespace

ProgramTrace trace_program(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
                           const std::vector<std::pair<std::string, Tensor>>& named_tensors, bool free_sizes) {
  ProgramTrace program;
  program.bytes = trace(fn, example_inputs, named_tensors, {.opset_version = kMaxOpset}, &program, free_sizes);
  return program;
}

namespace {
void stop_gradients_to_identities(::onnx::GraphProto& graph) {
  for (::onnx::NodeProto& node : *graph.mutable_node()) {
    for (::onnx::AttributeProto& a : *node.mutable_attribute())
      if (a.has_g()) stop_gradients_to_identities(*a.mutable_g());
    if (node.op_type() != "UgReplay") continue;
    const bool stops = std::ranges::any_of(
        node.attribute(), [](const ::onnx::AttributeProto& a) { return a.name() == "op" && a.s() == "stop_gradient"; });
    if (!stops) continue;
    node.set_op_type("Identity");
    node.clear_attribute();
  }
}
}  // namespace

namespace {
::onnx::ModelProto held_data_written(const std::string& bytes,
                                     const std::vector<std::pair<std::string, Tensor>>& held) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) fail("[jit] a program's model does not parse");
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, tensor] : held) by_name.emplace(name, &tensor);
  for (::onnx::TensorProto& init : *model.mutable_graph()->mutable_initializer()) {
    auto it = by_name.find(init.name());
    if (it == by_name.end() || init.data_location() != ::onnx::TensorProto::EXTERNAL) continue;
    const Tensor c = it->second->contiguous();
    init.clear_external_data();
    init.set_data_location(::onnx::TensorProto::DEFAULT);
    init.set_raw_data(c.raw_data(), c.nbytes());  // little-endian, as GraphBuilder::initializer writes
  }
  return model;
}
}  // namespace

std::string with_held_data(const std::string& bytes, const std::vector<std::pair<std::string, Tensor>>& held) {
  return held_data_written(bytes, held).SerializeAsString();
}

std::string file_form(const std::string& bytes, const std::vector<std::pair<std::string, Tensor>>& held) {
  ::onnx::ModelProto model = held_data_written(bytes, held);
  stop_gradients_to_identities(*model.mutable_graph());
  return model.SerializeAsString();
}

std::string with_symbolic_dims(const std::string& bytes, const std::vector<std::vector<bool>>& inputs,
                               const std::vector<std::vector<bool>>& outputs) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) fail("[jit] a program's model does not parse");
  auto mark = [](auto& values, const std::vector<std::vector<bool>>& any) {
    for (int i = 0; i < values.size() && static_cast<size_t>(i) < any.size(); ++i) {
      auto* shape = values.Mutable(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
      for (int d = 0; d < shape->dim_size() && static_cast<size_t>(d) < any[i].size(); ++d)
        if (any[i][d]) shape->mutable_dim(d)->set_dim_param(values.Get(i).name() + "_dim" + std::to_string(d));
    }
  };
  mark(*model.mutable_graph()->mutable_input(), inputs);
  mark(*model.mutable_graph()->mutable_output(), outputs);
  return model.SerializeAsString();
}

void export_function(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
                     const std::vector<std::pair<std::string, Tensor>>& named_tensors, const std::string& path,
                     const ExportOptions& options) {
  const std::string bytes = trace(fn, example_inputs, named_tensors, options, nullptr);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail<RuntimeError>("[onnx.export] cannot open '", path, "' for writing");
  if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    fail<RuntimeError>("[onnx.export] failed to write '", path, "'");
}

EvalModeGuard::EvalModeGuard(nn::Module& model) {
  for (const auto& [name, m] : model.named_modules()) modes_.emplace_back(m, m->is_training());
  model.eval();
}

// Parents come before their children in named_modules(), so each child's own mode is set last.
EvalModeGuard::~EvalModeGuard() {
  for (auto& [m, mode] : modes_) m->train(mode);
}

void export_model(nn::Module& model, const std::vector<Tensor>& example_inputs, const std::string& path,
                  const ExportOptions& options) {
  if (example_inputs.size() != 1)
    fail("[onnx.export] export_model runs the one-tensor forward: give 1 example input, got ", example_inputs.size());
  EvalModeGuard eval_mode(model);
  std::vector<std::pair<std::string, Tensor>> named = model.named_parameters();
  for (auto& b : model.named_buffers()) named.push_back(std::move(b));
  export_function([&model](const std::vector<Tensor>& x) { return std::vector<Tensor>{model(x[0])}; }, example_inputs,
                  named, path, options);
}

}  // namespace ug::onnx
