// The ONNX graph under construction during an export: value names of the traced tensors,
// which of their dims are dynamic, initializers and nodes. Internal to src/ug/onnx (it
// includes the protobuf classes, which stay out of unigrad's public headers).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/graph/capture.h"

namespace ug::onnx {

using graph::Attrs;
using graph::AttrValue;
using graph::CapturedCall;

/** Which dims of a value are symbolic (a dynamic axis flows into them). */
using DynamicDims = std::vector<bool>;

::onnx::TensorProto_DataType onnx_dtype(DType dtype);

class GraphBuilder {
 public:
  GraphBuilder(::onnx::GraphProto& graph, int64_t opset, std::vector<std::pair<std::string, Tensor>> params);
  /** A builder of a subgraph of `parent`'s graph (a Loop node's body): a tensor it did not
   *  make or take as an input is the enclosing graph's value, read by name (ONNX's outer
   *  scope), and names are drawn from the parent's, so that none shadows another. */
  GraphBuilder(::onnx::GraphProto& graph, GraphBuilder& parent);

  int64_t opset() const { return opset_; }

  /** From now on a tensor that is no traced value and no named parameter but is live state
   *  (it requires grad: a parameter the function closes over; or an op of the trace writes it:
   *  a buffer, a counter) becomes an initializer named param_N, listed in live_leaves(), which
   *  a program reads as it is at each run, rather than an anonymous constant. */
  void name_live_leaves() { name_live_leaves_ = true; }
  /** From now on (a program's trace) the results of a call made in a no_grad block of the traced
   *  function, when a call made outside one reads them or the program returns them, go through
   *  stop_gradient first, as they are detached eagerly: autograd recording through a run (grad of
   *  jit) does not follow them, whatever grad mode the trace ran in. reading_without_grad() says
   *  whether the reader is such a call (state written back is read so). */
  void stop_no_grad_results() { stop_no_grad_ = true; }
  void reading_without_grad(bool on) { reading_without_grad_ = on; }
  bool is_reading_without_grad() const { return reading_without_grad_; }
  const std::vector<std::pair<std::string, Tensor>>& live_leaves() const { return live_leaves_; }
  /** After name_live_leaves(): the tensors no op of the trace made that became constants (a
   *  tensor the function closes over), by initializer name. */
  const std::vector<std::pair<std::string, Tensor>>& constant_sources() const { return constant_sources_; }
  /** After name_live_leaves(): the initializers whose value the graph does not copy (parameters,
   *  state and contiguous constants the function closes over; their data is located at
   *  kHeldLocation), by name: a program holds these tensors, which may be a whole data set. */
  const std::vector<std::pair<std::string, Tensor>>& held() const { return held_; }

  /** How a captured call becomes nodes (export.cpp's loop body), and whether it can: the
   *  builder emits a composite's parts with it (emit_parts, and a part the graph reads; see
   *  value()). */
  using Emitter = std::function<void(GraphBuilder&, const CapturedCall&)>;
  using CanEmit = std::function<bool(const GraphBuilder&, const CapturedCall&)>;
  void set_emitter(Emitter emit, CanEmit can_emit) {
    emitter_ = std::move(emit);
    can_emit_ = std::move(can_emit);
  }
  void emit_call(const CapturedCall& call) { emitter_(*this, call); }
  /** While alive (and `where` is not empty), new nodes record `where` as their doc_string: the
   *  user code's line that made the call, which a program's checks name. */
  class SourceScope {
   public:
    SourceScope(GraphBuilder& g, const std::string& where);
    ~SourceScope();
    SourceScope(const SourceScope&) = delete;
    SourceScope& operator=(const SourceScope&) = delete;

   private:
    GraphBuilder& g_;
    std::string previous_;
    bool set_;
  };
  /** Emits the calls a composite made inside its own, in order: a program's form of an op
   *  that has no graph form of its own (batch_norm with batch statistics). */
  void emit_parts(const CapturedCall& call);
  /** Whether the call writes in place into a tensor batched by a vmap opened during the trace:
   *  its parts (the batching rule's write into the physical tensor) are its graph form. */
  bool writes_batched(const CapturedCall& call) const;
  /** After such a call's parts: its batched outputs read the first example of their physical
   *  tensors as written (see value()), as of the versions the call left them at. */
  void bind_batched_outputs(const CapturedCall& call);

  /** reduce_retracing's traces (compiler::Program::generalize): from now on every dim of every
   *  input counts as dynamic, and a size a rule needs is read from an input's shape where an
   *  input has a dim of that size (size_value), so that traces at other sizes make the same
   *  graph wherever nothing else depends on a size. The inputs keep their traced sizes in the
   *  graph. Call before add_input. */
  void free_sizes() { free_sizes_ = true; }
  bool sizes_free() const { return parent_ ? parent_->sizes_free() : free_sizes_; }
  /** Under free_sizes, `size` as a 1-element int64 value read from an input's shape at run time
   *  (dim `position` of an input first, else the innermost dim of that size; none for sizes
   *  below 2 or when no input has the size); nullopt otherwise. */
  std::optional<std::string> size_value(int64_t size, int64_t position);
  /** An int64 1-D value of `sizes` (a Reshape's or Expand's target): an initializer, or under
   *  free_sizes the Concat of size_value()s and constants when an input has one of the sizes. */
  std::string shape_value(const std::vector<int64_t>& sizes);
  /** Dims [start, end) of `value`'s run-time shape, a 1-D int64 value. */
  std::string shape_of(const std::string& value, int64_t start, int64_t end);

  /** From now on a call that carries a replay (an op without a graph form) becomes a UgReplay
   *  node calling it back, listed in replays(): programs only, never files. */
  void allow_replays() { allow_replays_ = true; }
  bool replays_allowed() const { return parent_ ? parent_->replays_allowed() : allow_replays_; }
  /** From now on (replays allowed) a custom derivative's call becomes a UgReplay node, which
   *  links its rule at each run, instead of its forward's ops: the form of a program whose
   *  run autograd records through. */
  void replay_custom_calls() { replay_custom_calls_ = true; }
  bool replays_custom_calls() const {
    return replays_allowed() && (parent_ ? parent_->replays_custom_calls() : replay_custom_calls_);
  }
  const std::vector<graph::Replay>& replays() const { return replays_; }
  /** The bytes of each value bound to a traced tensor, by value name (what a compiled
   *  program's memory plan weighs, compiler/remat.h). */
  std::unordered_map<std::string, int64_t> value_bytes() const;
  /** The buffer (storage) each traced tensor is in, by value name: which values are views of
   *  which, as the run made them. */
  std::unordered_map<std::string, const void*> value_buffers() const;
  /** The UgReplay node of a call (replays_allowed() and call.replay set). In a Loop body's
   *  builder too: the replay goes into the enclosing graph's list, whose index the node holds,
   *  and the program gives its bodies that list (compiler::Program::trace). */
  void replay(const CapturedCall& call);

  /** Declares t a graph input; `dim_names` holds a name for each symbolic dim ("" = fixed);
   *  `version` is t's data version when the trace began. */
  void add_input(const Tensor& t, const std::string& name, const std::vector<std::string>& dim_names, uint32_t version);
  /** Declares t's value a graph output of that name (through an Identity node). */
  void add_output(const Tensor& t, const std::string& name, const std::vector<std::string>& dim_names);
  /** t as the graph holds it: inside a vmap opened during the trace, its physical tensor (at
   *  every such level). A batch of a vmap around the trace (jit inside vmap) stays: the
   *  program then runs on the batched inputs. */
  Tensor physical(const Tensor& t) const;
  /** The highest vmap level of the inputs: the vmaps around the trace, which it does not open. */
  int outer_level() const { return outer_level_; }
  /** Binds t, output i of call (or its physical value, as a batched loop's carry), to the value
   *  `name`, as of the data version the call left it at. */
  void bind_output(const CapturedCall& call, size_t i, const Tensor& t, const std::string& name);
  /** Fails when an input of the call was written in place, after the op that computed it, by
   *  code outside the op table: the graph would read the value from before the write. A
   *  parameter or state tensor (read live by a program) may be written by ops after it was read:
   *  the calls of note_writes say which writes those were. An input that an in-place op the
   *  graph follows wrote after the call read it (a part emitted late, for a reader after the
   *  write) is read as it was: that earlier value is still in the graph. check_outputs then
   *  binds the input to its latest value again. */
  void check_inputs(const CapturedCall& call);
  /** Reads the trace before any node is built: the data versions every call's outputs were
   *  left at (the writes the graph follows), and which calls inside composites made which
   *  tensors (see value()). `calls` must outlive the builder. */
  void note_calls(const std::vector<CapturedCall>& calls);
  /** Whether a call of the trace reads t's memory (after note_calls): a rule whose second
   *  output only a later call may need (attention's log-sum-exp, for its backward). */
  bool read_by_a_call(const Tensor& t) const { return t.defined() && read_.contains(t.storage().get()); }
  /** Parameters and state tensors (read live) that ops wrote: each with its final value's
   *  name, which a program writes back into it after a run. */
  std::vector<std::pair<Tensor, std::string>> written_state() const;
  /** The initializer t became, when the graph read t as a constant. */
  std::optional<std::string> constant_name(const Tensor& t) const;

  /** The value name of t: a traced value or graph input; else the output of a call inside a
   *  composite (an intermediate a gradient saved), emitted now, when t still holds what that
   *  call left; else a new initializer (a parameter under its name, anything else a
   *  constant). With `dtype`, the value converted to it. */
  std::string value(const Tensor& t, std::optional<DType> dtype = std::nullopt);
  /** t's dynamic dims (none for initializers). */
  DynamicDims dynamic(const Tensor& t) const;
  /** A new int64 1-D initializer (shapes, axes). */
  std::string ints(const std::vector<int64_t>& values);
  /** A new 0-d initializer of `dtype`. */
  std::string scalar(double value, DType dtype);
  /** A fresh value name. */
  std::string fresh(const std::string& hint);

  ::onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);
  /** The output name of a call's i-th output, bound to it. Its dynamic dims are `dynamic`, or
   *  by default those of the inputs' dims of the same size, lined up on the right. */
  std::string output(const CapturedCall& call, size_t i = 0, std::optional<DynamicDims> dynamic = std::nullopt);
  /** After a call's rule ran: its outputs the rule gave no value (max_pool's indices) fail
   *  when used, naming the op, instead of being exported as constants of their traced value. */
  void check_outputs(const CapturedCall& call);

 private:
  struct Value {
    std::string name;
    DynamicDims dynamic;
    Tensor tensor;         // keeps the address that keys values_ alive
    bool traced = false;   // an input or an op's output, not an initializer
    uint32_t version = 0;  // the data version it was traced at
    std::string producer;  // the op that computed it ("" for an input)
  };
  void check_version(const Value& v, uint32_t version, const std::string& reader) const;
  /** t's value: bound to t itself, or a traced value of exactly t's elements (another handle). */
  const Value* same_value(const Tensor& t) const;
  /** t's value at `version`, which an in-place op the graph follows has since replaced. */
  const Value* earlier(const Tensor& t, uint32_t version) const;
  /** A replaced value at `version` that holds every element of t (a view of it), and its key. */
  std::pair<const void*, const Value*> earlier_holding(const Tensor& t, uint32_t version) const;
  /** The value name of t when it is a view of a traced value, made so by new nodes if need be. */
  std::optional<std::pair<std::string, uint32_t>> traced_view(const Tensor& t);
  /** t as nodes reading `base`'s elements, when base holds every element of t. */
  std::optional<std::string> view_of(const Value& base, const Tensor& t);
  /** base's value with the elements of t (a view of part of it) replaced by `value`: a write
   *  into a view (x[0].mul_(2)) made functional, as torch.compile's functionalization does. */
  std::string written_into(const Value& base, const Tensor& t, const std::string& value);
  // in-place writes into part of a value, emitted after the writing node (check_outputs):
  // (the base's key, the view written, the view's new value, the data version the write left)
  std::vector<std::tuple<const void*, Tensor, std::string, uint32_t>> pending_writes_;
  std::string initializer(const Tensor& t, const std::string& name);
  /** The state_dict name of t, when t is (a handle of) a parameter or buffer. */
  std::optional<std::string> param_name(const Tensor& t) const;
  /** The input and dim size_value reads `size` from (see there). */
  std::optional<std::pair<std::string, int64_t>> size_source(int64_t size, int64_t position) const;
  /** Under free_sizes, a constant the rules would freeze with the trace's sizes, made from the
   *  inputs' shapes instead: one value repeated over a shape an input has a size of
   *  (ConstantOfShape, as the ones and zeros of a loss's backward), or a 0-d count equal to an
   *  input's size (a mean's divisor). nullopt when t is neither. */
  std::optional<std::string> sized_constant(const Tensor& t, DType dtype);
  /** Binds t by emitting the call inside a composite that made it (the one that left it at
   *  `version`, by default t's current one); false when none can. */
  bool emit_part_making(const Tensor& t, std::optional<uint32_t> version = std::nullopt);
  /** Before an in-place write leaves t at version `written`: binds t, if a part made it, to the
   *  value it held just before (which a write into part of it then updates). */
  void bind_before_write(const Tensor& t, uint32_t written);
  /** note_calls' walk; `parts`: the calls are inside another call. */
  void note_calls(const std::vector<CapturedCall>& calls, bool parts);

  /** In a subgraph's builder: whether t is a value of the subgraph (its memory is an input's
   *  or a value the subgraph computed), not one of the enclosing graph. */
  bool made_here(const Tensor& t) const;
  /** Whether t, or a traced value of the same view, already has a value in this graph. */
  bool has_value(const Tensor& t) const;
  /** Binds a tensor batched by a vmap of the trace to a stand-in for one example (see value()),
   *  at `version`. */
  void bind_example(const Tensor& t, uint32_t version);

  ::onnx::GraphProto& graph_;
  GraphBuilder* parent_ = nullptr;
  int outer_level_ = 0;  // the highest vmap level of the inputs: vmaps around the trace
  int64_t opset_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::unordered_map<const void*, Value> values_;
  /** key -> the values an in-place op's write replaced in values_, by version. */
  std::unordered_map<const void*, std::unordered_map<uint32_t, Value>> earlier_;
  /** Per call being emitted (check_inputs to check_outputs): the inputs it reads as earlier
   *  values, to bind again after it to their latest (none: unbound) unless it bound them anew. */
  struct ReadAsOf {
    const void* key;
    Value latest;
    std::string read;  // the earlier value's name
  };
  std::vector<std::vector<ReadAsOf>> read_as_of_;
  std::unordered_map<const void*, std::pair<Tensor, std::string>> unexported_;  // the tensor, and why
  std::unordered_map<std::string, int64_t> counters_;
  bool name_live_leaves_ = false, allow_replays_ = false, free_sizes_ = false;
  std::vector<std::pair<std::string, Shape>> free_inputs_;    // under free_sizes: each input's name and shape
  std::unordered_map<std::string, std::string> size_values_;  // "input:dim" -> its size_value here
  std::vector<graph::Replay> replays_;
  bool replay_custom_calls_ = false;
  bool stop_no_grad_ = false, reading_without_grad_ = false;  // see stop_no_grad_results
  std::unordered_set<std::string> no_grad_made_;              // values a no_grad call made
  std::unordered_map<std::string, std::string> stopped_;      // such a value -> its stop_gradient
  /** `name` (a value a no_grad call made) through one stop_gradient node. */
  std::string stopped(const std::string& name);
  std::vector<std::pair<std::string, Tensor>> live_leaves_;
  std::vector<std::pair<std::string, Tensor>> constant_sources_;
  std::vector<std::pair<std::string, Tensor>> held_;
  /** initializer(t, name), except that a program's root graph holds t itself (see held()). */
  std::string held_initializer(const Tensor& t, const std::string& name);
  Emitter emitter_;
  CanEmit can_emit_;
  std::string where_;  // see SourceScope
  /** storage -> the calls inside composites that wrote it, with the output's index, in the order
   *  the calls finished (see emit_part_making). */
  std::unordered_map<const void*, std::vector<std::pair<const CapturedCall*, size_t>>> parts_;
  std::unordered_set<const CapturedCall*> emitted_parts_;
  std::unordered_set<std::string> emitted_params_;
  std::unordered_map<const void*, std::unordered_set<uint32_t>> writes_;  // storage -> versions ops left
  std::unordered_set<const void*> written_in_place_;                      // storages ops wrote in place
  std::unordered_set<const void*> read_;                                  // storages calls read
};

void set_attr(::onnx::NodeProto& node, const std::string& name, int64_t value);
void set_attr(::onnx::NodeProto& node, const std::string& name, double value);
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::string& value);
/** A tensor attribute: ConstantOfShape's one-element `value`. */
void set_attr(::onnx::NodeProto& node, const std::string& name, const Tensor& value);

/** A traced call's attribute; raises when it is missing. */
const AttrValue& attr(const CapturedCall& call, const std::string& name);
int64_t attr_int(const CapturedCall& call, const std::string& name);
double attr_float(const CapturedCall& call, const std::string& name);
const std::vector<int64_t>& attr_ints(const CapturedCall& call, const std::string& name);
const std::string& attr_string(const CapturedCall& call, const std::string& name);
bool has_attr(const CapturedCall& call, const std::string& name);

}  // namespace ug::onnx
