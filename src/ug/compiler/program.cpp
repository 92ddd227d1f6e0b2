#include "ug/compiler/program.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "ug/autograd/custom_watch.h"
#include "ug/compiler/debug.h"
#include "ug/compiler/fuse.h"
#include "ug/core/value_read.h"
#include "ug/compiler/remat.h"
#include "ug/compiler/simplify.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/core/error.h"
#include "ug/core/random.h"
#include "ug/graph/capture.h"
#include "ug/graph/size_reads.h"
#include "ug/onnx/export.h"
#include "ug/onnx/graph.h"

namespace ug::compiler {

namespace {

const void* storage_of(const Tensor& t) { return t.defined() ? t.storage().get() : nullptr; }

/** Gives the Loop bodies of g (just parsed, not yet shared) g's called-back ops: their UgReplay
 *  nodes index the one list of the whole trace. */
void share_replays(onnx::Graph& g, const std::vector<onnx::Replay>& replays) {
  for (onnx::Node& n : g.nodes)
    for (auto& [name, a] : n.attributes)
      if (auto* body = std::get_if<std::shared_ptr<const onnx::Graph>>(&a)) {
        auto copy = std::make_shared<onnx::Graph>(**body);
        copy->replays = replays;
        share_replays(*copy, replays);
        *body = std::move(copy);
      }
}

}  // namespace

/** What the function being traced on this thread has computed so far: the storages of its
 *  inputs and of every captured op's outputs that read one (or draw random numbers). */
struct TraceState {
  std::unordered_set<const void*> storages;
  size_t calls_seen = 0;
  int loop_bodies = 0;  // LoopBodyScopes open
  const char* who = "jit";
  std::string shape_read_at;
  void (*previous_hook)(const Tensor&) = nullptr;      // the value-read hook before this trace's
  std::vector<std::function<void()>> debug_callbacks;  // deferred to the end of a jit trace
};

namespace {
thread_local TraceState* t_trace = nullptr;
}  // namespace

namespace {
bool traced(const Tensor& t, bool in_open_calls);

void refuse_traced_read(const Tensor& t) {
  // An op's own read inside its call (matrix_exp's norm) is replayed with the op at each run.
  if (!traced(t, false)) return;
  const char* op = ug::detail::current_op;
  fail<TypeError>("[", t_trace->who, "] ", op ? "op '" : "", op ? op : "C++ code", op ? "'" : "",
                  " read the value of a traced tensor (", t.dtype(), " ", t.shape(),
                  ") with item(): its value is not known while the function is traced, and a compiled program "
                  "would keep this trace's value for every later call. Compute the choice with tensor ops "
                  "(ug::where, ug::cond), or run the function uncompiled.");
}
}  // namespace

TracedValuesScope::TracedValuesScope(const std::vector<Tensor>& inputs, const char* who)
    : state_(std::make_unique<TraceState>()), previous_(t_trace) {
  state_->previous_hook = ug::detail::value_read_hook;
  for (const Tensor& x : inputs) state_->storages.insert(storage_of(x));
  state_->who = who;
  t_trace = state_.get();
  ug::detail::value_read_hook = &refuse_traced_read;
}

TracedValuesScope::~TracedValuesScope() {
  t_trace = previous_;
  ug::detail::value_read_hook = state_->previous_hook;
}

const std::string& TracedValuesScope::shape_read_at() const { return state_->shape_read_at; }

void note_shape_read(const std::string& where) {
  if (t_trace && t_trace->shape_read_at.empty()) t_trace->shape_read_at = where;
}

bool is_traced(const Tensor& t) { return traced(t, true); }

namespace {

/** Whether t holds a value of the trace: made by the recorded calls, or (`in_open_calls`) by
 *  the calls recorded so far inside a call in progress (a vmap's body). */
bool traced(const Tensor& t, bool in_open_calls) {
  TraceState* s = t_trace;
  const graph::Capture* capture = graph::detail::current_capture;
  if (!s || !capture || !t.defined()) return false;
  if (s->loop_bodies > 0) return true;
  // A call that reads a traced value makes traced values: `made` collects them. A draw, or an
  // in-place write (of state the function closed over: a batch counter), is a value of this run too.
  auto note = [s](const graph::CapturedCall& call, std::unordered_set<const void*>& made) {
    bool reads_traced = call.op == "random";
    for (size_t i = 0; i < call.outputs.size(); ++i) reads_traced = reads_traced || call.writes_in_place(i);
    for (const Tensor& in : call.inputs)
      reads_traced = reads_traced || s->storages.contains(storage_of(in)) || made.contains(storage_of(in));
    if (reads_traced)
      for (const Tensor& out : call.outputs)
        if (out.defined()) made.insert(storage_of(out));
  };
  const auto& calls = capture->calls();
  for (; s->calls_seen < calls.size(); ++s->calls_seen) note(calls[s->calls_seen], s->storages);
  if (s->storages.contains(storage_of(t))) return true;
  if (!in_open_calls) return false;
  // Made inside a call still in progress, whose list grows until it ends.
  std::unordered_set<const void*> made;
  for (const graph::CapturedCall* call : capture->open_parts()) note(*call, made);
  return made.contains(storage_of(t));
}

}  // namespace

bool defer_debug_callback(std::function<void()> call) {
  if (!t_trace || std::string_view(t_trace->who) != "jit") return false;
  t_trace->debug_callbacks.push_back(std::move(call));
  return true;
}

bool tracing_loop_body() { return t_trace && graph::detail::current_capture && t_trace->loop_bodies > 0; }

OutsideTrace::OutsideTrace()
    : trace_(t_trace), capture_(graph::detail::current_capture), hook_(ug::detail::value_read_hook) {
  if (trace_) ug::detail::value_read_hook = trace_->previous_hook;
  t_trace = nullptr;
  graph::detail::current_capture = nullptr;
}

OutsideTrace::~OutsideTrace() {
  t_trace = trace_;
  graph::detail::current_capture = capture_;
  ug::detail::value_read_hook = hook_;
}

LoopBodyScope::LoopBodyScope() : active_(t_trace && graph::detail::current_capture) {
  if (active_) ++t_trace->loop_bodies;
}

LoopBodyScope::~LoopBodyScope() {
  if (active_) --t_trace->loop_bodies;
}

void check_concrete(const Tensor& t, const char* what, const std::string& where) {
  if (!is_traced(t)) return;
  fail<TypeError>("[", t_trace->who, "] ", what, " of a traced tensor (", t.dtype(), " ", t.shape(), ")",
                  where.empty() ? "" : " at ", where,
                  ": its value is not known while the function is traced, and the traced graph cannot take "
                  "a Python branch on it. Use ug.where or ug.cond for a choice that depends on the data, "
                  "ug.while_loop / ug.fori_loop for a loop, or mark the argument static (static_argnums / "
                  "static_argnames) to compile one program per value.");
}

Program Program::trace(const Function& fn, const std::vector<Tensor>& example_inputs, const NamedTensors& state) {
  return trace_with_outputs(fn, example_inputs, state).first;
}

std::pair<Program, std::vector<Tensor>> Program::trace_with_outputs(const Function& fn,
                                                                    const std::vector<Tensor>& example_inputs,
                                                                    const NamedTensors& state, bool free_sizes) {
  onnx::ProgramTrace traced;
  const auto generator = default_generator().get_state();
  std::string shape_read_at;
  std::vector<std::function<void()>> debug_callbacks;
  graph::SizeReads size_reads;
  {
    TracedValuesScope scope(example_inputs, "jit");
    autograd::CustomRuleWatch custom_rules;
    try {
      traced = onnx::trace_program(fn, example_inputs, state, free_sizes);
    } catch (const ValueError& e) {
      fail("[jit] cannot compile the function: ", e.what());
    }
    shape_read_at = scope.shape_read_at();
    debug_callbacks = std::move(t_trace->debug_callbacks);
    // A custom_call's rule is linked again by the program's runs (replaying_); a node the
    // function linked itself (custom_function given its outputs) would be lost.
    if (std::vector<std::string> names = custom_rules.unapplied_reached_from(traced.outputs); !names.empty()) {
      std::string listed;
      for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
      fail<RuntimeError>("[jit] ", listed,
                         ": a custom derivative whose outputs the function linked itself (custom_function given "
                         "its outputs) and whose backward runs outside the compiled function; a program holds the "
                         "ops it traced, not that rule: give custom_function the forward (CustomForward) so that "
                         "the program calls it back, or differentiate inside the compiled function");
    }
  }
  std::shared_ptr<onnx::ProgramTrace> replaying = std::move(traced.replaying_custom);
  std::vector<Tensor> outputs = traced.outputs;
  Program p = from_trace(std::move(traced), state, shape_read_at, size_reads.reads());
  // A training step's runs record no autograd: its traced run's results (the first call's) are
  // as detached as every later call's.
  if (p.holds_step_)
    for (Tensor& t : outputs) t = t.detach();
  if (replaying) {
    p.replaying_ =
        std::make_shared<const Program>(from_trace(std::move(*replaying), state, shape_read_at, size_reads.reads()));
  }
  // A program that writes no state runs after its trace, as the call's result: the trace's
  // random draws must not have taken that run's numbers from the global generator.
  if (!p.writes_state()) default_generator().set_state(generator);
  else  // its results are the first call's: so are its debug callbacks
    for (const auto& call : debug_callbacks) call();
  return {std::move(p), std::move(outputs)};
}

Program Program::from_trace(onnx::ProgramTrace traced, const NamedTensors& state, const std::string& shape_read_at,
                            const std::vector<std::pair<std::string, int64_t>>& size_reads) {
  // The graph came from this process, not from a file: no size limits beyond memory's.
  constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;
  onnx::LoadLimits limits{.max_elements = kUnlimited, .max_live_elements = kUnlimited};
  auto graph = std::make_shared<onnx::Graph>(onnx::parse_model(traced.bytes, "", limits, traced.held));
  graph->replays.assign(std::make_move_iterator(traced.replays.begin()), std::make_move_iterator(traced.replays.end()));
  share_replays(*graph, graph->replays);
  Program p;
  auto ids_of = [&](const NamedTensors& named) {
    std::vector<std::pair<int64_t, Tensor>> ids;
    for (size_t i = 0; i < graph->initializers.size(); ++i)
      for (const auto& [name, tensor] : named)
        if (graph->initializers[i].first == name) ids.emplace_back(graph->initializer_ids[i], tensor);
    return ids;
  };
  NamedTensors live = std::move(traced.live_leaves);  // closed-over parameters and state, named by the trace
  live.insert(live.end(), state.begin(), state.end());
  p.state_ = std::make_shared<const std::vector<std::pair<int64_t, Tensor>>>(ids_of(live));
  p.grad_sources_ = std::make_shared<const std::vector<std::pair<int64_t, Tensor>>>(ids_of(traced.grad_sources));
  std::vector<std::pair<Tensor, uint32_t>> constants_read;
  for (const auto& source : traced.constant_sources) {
    const bool refilled = std::any_of(traced.grad_sources.begin(), traced.grad_sources.end(),
                                      [&source](const auto& g) { return g.first == source.first; });
    if (!refilled) constants_read.emplace_back(source.second, source.second.version());
  }
  p.constants_read_ = std::make_shared<const std::vector<std::pair<Tensor, uint32_t>>>(std::move(constants_read));
  std::unordered_set<int64_t> refilled;  // at every run: never constants
  for (const auto* ids : {p.state_.get(), p.grad_sources_.get()})
    for (const auto& [id, tensor] : *ids) refilled.insert(id);
  p.stats_ = simplify(*graph, refilled);
  auto recording = std::make_shared<const onnx::Graph>(*graph);
  std::vector<int64_t> bytes(graph->num_values, -1);  // -1: not a traced tensor's
  std::vector<const void*> buffers(graph->num_values, nullptr);
  for (size_t id = 0; id < graph->num_values; ++id) {
    if (auto it = traced.value_bytes.find(graph->value_names[id]); it != traced.value_bytes.end())
      bytes[id] = it->second;
    if (auto it = traced.value_buffers.find(graph->value_names[id]); it != traced.value_buffers.end())
      buffers[id] = it->second;
  }
  p.stats_.recomputed = rematerialize(*graph, std::move(bytes), buffers);
  if (p.stats_.recomputed) p.recording_graph_ = std::move(recording);
  auto fused = std::make_shared<onnx::Graph>(*graph);
  const FuseStats fusion = fuse(*fused);
  p.stats_.fused = fusion.nodes;
  p.stats_.fused_groups = fusion.groups;
  p.stats_.applied = fusion.applied;
  if (fusion.groups || fusion.applied || fusion.stops) p.fused_graph_ = std::move(fused);
  p.writes_ = std::make_shared<const std::vector<std::pair<Tensor, int64_t>>>(std::move(traced.state_writes));
  p.grad_writes_ = std::make_shared<const std::vector<std::pair<Tensor, int64_t>>>(std::move(traced.grad_writes));
  p.input_writes_ = std::make_shared<const std::vector<std::pair<size_t, int64_t>>>(std::move(traced.input_writes));
  p.outside_grads_ = std::make_shared<const std::vector<Tensor>>(std::move(traced.outside_grads));
  std::vector<std::vector<bool>> any_size;
  for (const onnx::ValueInfo& in : graph->inputs) any_size.emplace_back(in.shape.size(), false);
  p.any_size_ = std::make_shared<const std::vector<std::vector<bool>>>(std::move(any_size));
  p.shape_read_at_ = shape_read_at;
  p.size_reads_ = size_reads;
  p.num_results_ = traced.outputs.size();
  p.holds_step_ = !p.grad_writes_->empty();
  for (const auto& [target, index] : *p.writes_) p.holds_step_ = p.holds_step_ || target.requires_grad();
  p.graph_ = std::move(graph);
  p.bytes_ = std::make_shared<const std::string>(std::move(traced.bytes));
  p.held_ = std::make_shared<const std::vector<std::pair<std::string, Tensor>>>(std::move(traced.held));
  return p;
}

bool Program::records(const std::vector<Tensor>& inputs) const {
  if (holds_step_ || !GradMode::is_enabled()) return false;
  auto wants_grad = [](const Tensor& t) { return t.defined() && t.requires_grad(); };
  return std::ranges::any_of(inputs, wants_grad) ||
         std::ranges::any_of(*state_, [&](const auto& entry) { return wants_grad(entry.second); });
}

namespace {

/** The outputs with each constant the graph gives as one (a tensor made inside the function)
 *  copied: the caller may write into it, which must not change what later runs return, as
 *  eager code makes the tensor anew at each call. A parameter, which requires grad, stays the
 *  caller's tensor. */
std::vector<Tensor> fresh_constants(const onnx::Graph& g, std::vector<Tensor> out) {
  for (const auto& [k, i] : g.initializer_outputs)
    if (k < out.size() && out[k].defined() && !out[k].requires_grad() &&
        out[k].storage() == g.initializers[i].second.storage())
      out[k] = out[k].clone();
  return out;
}

}  // namespace

std::vector<Tensor> Program::operator()(std::vector<Tensor> inputs) const {
  if (replaying_ && (records(inputs) || forward::active())) return (*replaying_)(std::move(inputs));
  // Autograd recording through the run would backpropagate through each recomputed copy
  // separately, summing what the unplanned program's backward sums before the copied op's
  // gradient: the graph without the copies keeps those gradients the eager ones.
  // A run that records keeps the unfused graph: its backward needs the intermediates anyway.
  // The fused graph has no stop_gradient nodes: not for a run that carries forward tangents.
  const bool recorded = records(inputs), plain = !recorded && !forward::active();
  const onnx::Graph& g = recorded && recording_graph_ ? *recording_graph_
                         : plain && fused_graph_      ? *fused_graph_
                                                      : *graph_;
  if (inputs.size() != g.inputs.size())
    fail("[jit] the program takes ", g.inputs.size(), " tensor(s), got ", inputs.size());
  // Nothing a plain run computes requires grad: without grad mode, its views hold no base,
  // so that the fused steps may write into the buffers that die.
  std::optional<NoGradGuard> plain_run;
  if (plain) plain_run.emplace();
  std::vector<Tensor> written_inputs;  // the caller's tensors the run writes back into
  for (const auto& [input, index] : *input_writes_)
    if (input < inputs.size()) written_inputs.push_back(inputs[input]);
  std::vector<Tensor> values(g.num_values);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const onnx::ValueInfo& info = g.inputs[i];
    const Tensor& x = inputs[i];
    if (!x.defined()) fail("[jit] input ", i, " is an undefined tensor");
    const std::vector<bool>& any = (*any_size_)[i];
    bool fits = x.dtype() == info.dtype && static_cast<size_t>(x.dim()) == info.shape.size();
    for (size_t d = 0; fits && d < info.shape.size(); ++d)
      fits = any[d] || info.shape[d] == x.size(static_cast<int64_t>(d));
    if (!fits) {
      std::string dims;
      for (size_t d = 0; d < info.shape.size(); ++d)
        dims += (d ? ", " : "") + (any[d] ? std::string("?") : std::to_string(info.shape[d]));
      fail<TypeError>("[jit] input ", i, " must be ", info.dtype, " [", dims, "] as traced, got ", x.dtype(), " ",
                      x.shape());
    }
    values[static_cast<size_t>(g.input_ids[i])] = std::move(inputs[i]);
  }
  for (size_t i = 0; i < g.initializer_ids.size(); ++i)
    values[static_cast<size_t>(g.initializer_ids[i])] = g.initializers[i].second;
  for (const auto& [id, tensor] : *state_) values[static_cast<size_t>(id)] = tensor;
  for (const auto& [id, leaf] : *grad_sources_) {
    Tensor grad = leaf.grad();
    if (grad.defined() && (grad.shape() != leaf.shape() || grad.dtype() != leaf.dtype()))
      fail("[jit] a parameter's .grad is ", grad.dtype(), " ", grad.shape(), ", the parameter ", leaf.dtype(), " ",
           leaf.shape());
    values[static_cast<size_t>(id)] =
        grad.defined() ? grad.detach() : zeros(leaf.shape(), {.dtype = leaf.dtype(), .device = leaf.device()});
  }
  if (!writes_state()) return fresh_constants(g, onnx::run_graph(g, std::move(values)));

  // A training step holds its own backward: autograd records nothing through it. A forward
  // that writes buffers stays differentiable; the writes themselves are never recorded.
  std::optional<NoGradGuard> step_mode;
  if (holds_step_) step_mode.emplace();
  std::vector<Tensor> out = onnx::run_graph(g, std::move(values));
  NoGradGuard writing;
  for (const auto& [target, index] : *writes_) {
    const Tensor& value = out[static_cast<size_t>(index)];
    // An optimizer's step wrote the live tensor itself.
    if (value.storage() == target.storage() && value.storage_offset() == target.storage_offset()) continue;
    Tensor(target).copy_(value);
  }
  for (size_t i = 0; i < written_inputs.size(); ++i)
    written_inputs[i].copy_(out[static_cast<size_t>((*input_writes_)[i].second)]);
  for (const auto& [leaf, index] : *grad_writes_) leaf.set_grad(index < 0 ? Tensor() : out[static_cast<size_t>(index)]);
  out.resize(num_results_);
  return fresh_constants(g, std::move(out));
}

size_t Program::num_inputs() const { return graph_->inputs.size(); }
size_t Program::num_outputs() const { return num_results_; }

std::vector<std::string> Program::node_types() const {
  std::vector<std::string> types;
  for (const onnx::Node& n : graph_->nodes) types.push_back(n.op_type);
  return types;
}

std::string Program::text(bool as_run) const { return onnx::to_text(as_run && fused_graph_ ? *fused_graph_ : *graph_); }

std::string Program::stale() const {
  const std::vector<Tensor> written = written_constants();
  if (written.empty()) return "";
  return detail::cat("a tensor it reads as a constant (", written[0].dtype(), " ", written[0].shape(),
                     ") was written in place since the trace");
}

std::vector<Tensor> Program::written_constants() const {
  std::vector<Tensor> written;
  if (constants_read_)
    for (const auto& [t, version] : *constants_read_)
      if (t.version() != version) written.push_back(t);
  return written;
}

std::string Program::onnx_bytes() const { return onnx::with_held_data(*bytes_, *held_); }

std::vector<std::string> Program::called_back() const {
  std::vector<std::string> ops;
  for (const onnx::Node& n : graph_->nodes) {
    if (n.op_type != "UgReplay") continue;
    const std::string& op = std::get<std::string>(n.attributes.at("op"));
    if (op != "stop_gradient") ops.push_back(op);  // a file holds it as Identity (file_form)
  }
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

void Program::save(const std::string& path) const {
  std::string called_back;
  for (const std::string& op : this->called_back()) called_back += (called_back.empty() ? "" : ", ") + op;
  if (!called_back.empty())
    fail("[jit.save] the program calls unigrad back for ", called_back,
         ", which a file cannot hold (ops without an ONNX form, whose reason ug.onnx.export gives, a training step's "
         "optimizer update, fused backward kernels): save a function without them, or write a gradient function "
         "with ug.onnx.export, which writes the backward kernels' formulas");
  const std::string bytes = onnx::file_form(*bytes_, *held_);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    fail<RuntimeError>("[jit.save] cannot write '", path, "'");
}

}  // namespace ug::compiler
