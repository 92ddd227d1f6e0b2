#include "ug/onnx/graph_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <variant>

#include "ug/core/batching.h"
#include "ug/core/error.h"
#include "ug/onnx/graph.h"

namespace ug::onnx {

::onnx::TensorProto_DataType onnx_dtype(DType dtype) {
  switch (dtype) {
    case DType::Bool: return ::onnx::TensorProto_DataType_BOOL;
    case DType::UInt8: return ::onnx::TensorProto_DataType_UINT8;
    case DType::Int8: return ::onnx::TensorProto_DataType_INT8;
    case DType::Int16: return ::onnx::TensorProto_DataType_INT16;
    case DType::UInt16: return ::onnx::TensorProto_DataType_UINT16;
    case DType::UInt32: return ::onnx::TensorProto_DataType_UINT32;
    case DType::UInt64: return ::onnx::TensorProto_DataType_UINT64;
    case DType::Int32: return ::onnx::TensorProto_DataType_INT32;
    case DType::Int64: return ::onnx::TensorProto_DataType_INT64;
    case DType::Float16: return ::onnx::TensorProto_DataType_FLOAT16;
    case DType::BFloat16: return ::onnx::TensorProto_DataType_BFLOAT16;
    case DType::Float32: return ::onnx::TensorProto_DataType_FLOAT;
    case DType::Float64: return ::onnx::TensorProto_DataType_DOUBLE;
    case DType::Complex64: return ::onnx::TensorProto_DataType_COMPLEX64;
    case DType::Complex128: return ::onnx::TensorProto_DataType_COMPLEX128;
  }
  fail("[onnx.export] unknown dtype");
}

namespace {

const void* key(const Tensor& t) { return t.impl_ref().get(); }

/** Whether a and b are the same elements of the same memory. A batched tensor's own layout is
 *  one example's over its physical tensor's memory (batching::wrap): two are the same view
 *  where their physical tensors are. */
bool same_view(const Tensor& a, const Tensor& b) {
  const BatchInfo *ba = a.impl().batch(), *bb = b.impl().batch();
  if (ba || bb) return ba && bb && ba->level == bb->level && same_view(Tensor(ba->physical), Tensor(bb->physical));
  return a.storage() == b.storage() && a.storage_offset() == b.storage_offset() && a.shape() == b.shape() &&
         a.strides() == b.strides() && a.dtype() == b.dtype();
}

/** Whether every element of view lies in whole, which is contiguous. */
bool within(const Tensor& view, const Tensor& whole) {
  if (!whole.is_contiguous()) return false;
  if (view.numel() == 0) return true;
  int64_t lo = view.storage_offset(), hi = view.storage_offset();
  for (int64_t d = 0; d < view.dim(); ++d) {
    const int64_t reach = (view.size(d) - 1) * view.stride(d);
    (reach < 0 ? lo : hi) += reach;
  }
  return lo >= whole.storage_offset() && hi < whole.storage_offset() + whole.numel();
}

void set_type(::onnx::ValueInfoProto& info, const Tensor& t, const std::vector<std::string>& dim_names) {
  auto* type = info.mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx_dtype(t.dtype()));
  auto* shape = type->mutable_shape();
  for (int64_t d = 0; d < t.dim(); ++d) {
    auto* dim = shape->add_dim();
    const std::string& symbol = static_cast<size_t>(d) < dim_names.size() ? dim_names[d] : std::string();
    if (symbol.empty()) dim->set_dim_value(t.size(d));
    else dim->set_dim_param(symbol);
  }
}

}  // namespace

GraphBuilder::GraphBuilder(::onnx::GraphProto& graph, int64_t opset, std::vector<std::pair<std::string, Tensor>> params)
    : graph_(graph), opset_(opset), params_(std::move(params)) {}

GraphBuilder::GraphBuilder(::onnx::GraphProto& graph, GraphBuilder& parent)
    : graph_(graph),
      parent_(&parent),
      outer_level_(parent.outer_level_),  // a subgraph's values are the enclosing graph's examples too
      opset_(parent.opset_),
      emitter_(parent.emitter_),
      can_emit_(parent.can_emit_),
      where_(parent.where_) {}

bool GraphBuilder::made_here(const Tensor& t) const {
  // A value of an enclosing graph is its, though a part here made a view of its memory (a
  // broadcast of a value the subgraph closes over): the view is made here, from it.
  for (const GraphBuilder* g = parent_; g; g = g->parent_)
    if (g->has_value(t)) return false;
  if (parts_.contains(t.storage().get())) return true;
  for (const auto& [k, v] : values_)
    if (v.traced && v.tensor.storage() == t.storage()) return true;
  return false;
}

bool GraphBuilder::has_value(const Tensor& t) const {
  if (values_.contains(key(t))) return true;
  return std::ranges::any_of(values_, [&](const auto& kv) {
    return kv.second.traced && kv.second.tensor.dtype() == t.dtype() && same_view(kv.second.tensor, t);
  });
}

Tensor GraphBuilder::physical(const Tensor& t) const {
  const BatchInfo* b = t.impl().batch();
  return b && b->level > outer_level_ ? physical(Tensor(b->physical)) : t;
}

namespace {

/** The data version of output i as its call left it: later in-place ops may have moved on. */
uint32_t output_version(const CapturedCall& call, size_t i) {
  return i < call.output_versions.size() ? call.output_versions[i] : call.outputs.at(i).version();
}

}  // namespace

void GraphBuilder::bind_output(const CapturedCall& call, size_t i, const Tensor& t, const std::string& name) {
  values_[key(t)] = {name, DynamicDims(static_cast<size_t>(t.dim()), false), t, true, output_version(call, i), call.op};
}

void GraphBuilder::add_input(const Tensor& t, const std::string& name, const std::vector<std::string>& dim_names,
                             uint32_t version) {
  if (!parent_) outer_level_ = std::max(outer_level_, batching::level(t));
  set_type(*graph_.add_input(), t, dim_names);
  graph_.mutable_input(graph_.input_size() - 1)->set_name(name);
  DynamicDims dynamic(static_cast<size_t>(t.dim()), free_sizes_);
  for (size_t d = 0; d < dim_names.size() && d < dynamic.size(); ++d) dynamic[d] = dynamic[d] || !dim_names[d].empty();
  values_[key(t)] = {name, dynamic, t, true, version, ""};
  if (free_sizes_) free_inputs_.emplace_back(name, t.shape());
}

void GraphBuilder::add_output(const Tensor& t, const std::string& name, const std::vector<std::string>& dim_names) {
  if (auto it = values_.find(key(t)); it != values_.end() && it->second.traced)
    check_version(it->second, t.version(), "the graph output '" + name + "'");
  node("Identity", {value(t)}, {name});
  set_type(*graph_.add_output(), t, dim_names);
  graph_.mutable_output(graph_.output_size() - 1)->set_name(name);
}

std::unordered_map<std::string, int64_t> GraphBuilder::value_bytes() const {
  std::unordered_map<std::string, int64_t> bytes;
  for (const auto& [k, v] : values_) bytes[v.name] = static_cast<int64_t>(physical(v.tensor).nbytes());
  return bytes;
}

std::unordered_map<std::string, const void*> GraphBuilder::value_buffers() const {
  std::unordered_map<std::string, const void*> buffers;
  for (const auto& [k, v] : values_) buffers[v.name] = physical(v.tensor).storage().get();
  return buffers;
}

std::optional<std::string> GraphBuilder::param_name(const Tensor& t) const {
  for (const auto& [name, p] : params_) {
    if (!p.defined()) continue;
    if (key(p) == key(t) || (p.storage() == t.storage() && p.storage_offset() == t.storage_offset() &&
                             p.shape() == t.shape() && p.strides() == t.strides() && p.dtype() == t.dtype()))
      return name;
  }
  return std::nullopt;
}

std::string GraphBuilder::initializer(const Tensor& t, const std::string& name) {
  ::onnx::TensorProto& init = *graph_.add_initializer();
  init.set_name(name);
  init.set_data_type(onnx_dtype(t.dtype()));
  for (int64_t s : t.shape()) init.add_dims(s);
  // raw_data is little-endian, as is every host unigrad runs on.
  Tensor c = t.contiguous();
  init.set_raw_data(c.raw_data(), c.nbytes());
  return name;
}

std::string GraphBuilder::held_initializer(const Tensor& t, const std::string& name) {
  if (!name_live_leaves_ || parent_ || !t.is_contiguous() || batching::level(t)) return initializer(t, name);
  ::onnx::TensorProto& init = *graph_.add_initializer();
  init.set_name(name);
  init.set_data_type(onnx_dtype(t.dtype()));
  for (int64_t s : t.shape()) init.add_dims(s);
  init.set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* location = init.add_external_data();
  location->set_key("location");
  location->set_value(std::string(kHeldLocation));
  held_.emplace_back(name, t.detach());
  return name;
}

std::string GraphBuilder::value(const Tensor& t, std::optional<DType> dtype) {
  if (!t.defined()) fail<RuntimeError>("[onnx.export] an op used an undefined tensor");
  if (auto it = unexported_.find(key(t)); it != unexported_.end()) fail("[onnx.export] ", it->second.second);
  if (auto it = values_.find(key(t)); it != values_.end()) {
    std::string name = it->second.name;
    if (!reading_without_grad_ && no_grad_made_.contains(name)) name = stopped(name);
    if (!dtype || *dtype == t.dtype()) return name;
    std::string cast = fresh(name + "_cast");
    set_attr(node("Cast", {name}, {cast}), "to", static_cast<int64_t>(onnx_dtype(*dtype)));
    return cast;
  }
  if (parent_ && !made_here(t)) return parent_->value(t, dtype);
  if (const BatchInfo* b = t.impl().batch(); b && b->level > outer_level_) {
    bind_example(t, t.version());
    return value(t, dtype);
  }
  if (const Value* v = same_value(t); !(v && v->traced) && emit_part_making(t)) return value(t, dtype);
  if (auto view = traced_view(t)) {
    values_[key(t)] = {view->first, DynamicDims(static_cast<size_t>(t.dim()), false), t, true, view->second, "a view"};
    return value(t, dtype);
  }
  std::string name;
  if (auto param = param_name(t)) {
    // Another handle of a parameter already in the graph is that initializer.
    name = emitted_params_.insert(*param).second ? held_initializer(t, *param) : *param;
  } else if (name_live_leaves_ &&
             (t.requires_grad() || t.impl().is_parameter() || written_in_place_.contains(t.storage().get()))) {
    // A parameter is read live even while frozen (requires_grad_(False)): a step that
    // unfreezes it later updates it behind this program's back.
    name = held_initializer(t, fresh("param"));
    emitted_params_.insert(name);
    live_leaves_.emplace_back(name, t);
    params_.emplace_back(name, t);
  } else {
    if (auto made = sized_constant(t, dtype.value_or(t.dtype()))) name = *made;
    else if (dtype && *dtype != t.dtype()) name = initializer(t.to(*dtype), fresh("const"));
    else name = held_initializer(t, fresh("const"));
    if (name_live_leaves_) constant_sources_.emplace_back(name, t);
    if (dtype && *dtype != t.dtype()) return name;  // a converted copy: not t's own value
  }
  values_[key(t)] = {name, DynamicDims(static_cast<size_t>(t.dim()), false), t};
  return value(t, dtype);
}

// A tensor no op produced may still be a traced value under another handle: detach() and
// view() of the same shape make a new tensor without an op call (grad's inputs are made so),
// and ops keep views they made inside their call (hidden from the capture) for their
// gradients. Such a tensor is its elements of the traced value: the same value, a Reshape of
// it, or, for any other strided view of a contiguous value, a Gather of its elements at the
// view's positions. As a constant it would freeze the value of one trace.
std::optional<std::pair<std::string, uint32_t>> GraphBuilder::traced_view(const Tensor& t) {
  // Traced values of t's memory and dtype: the same view (the latest version) first, then
  // contiguous bases. Taken in the order of their names, not of the map's addresses, so that
  // two traces of one function make the same graph (reduce_retracing compares them).
  std::vector<const Value*> same, bases;
  for (const auto& [k, v] : values_) {
    if (!v.traced || v.tensor.storage() != t.storage() || v.tensor.dtype() != t.dtype()) continue;
    if (same_view(v.tensor, t)) same.push_back(&v);
    else if (!batching::level(v.tensor) && !batching::level(t)) bases.push_back(&v);  // positions of real layouts
  }
  auto by_name = [](const Value* a, const Value* b) { return a->name < b->name; };
  if (!same.empty()) {
    const Value* v = *std::max_element(same.begin(), same.end(), [&](const Value* a, const Value* b) {
      return a->version != b->version ? a->version < b->version : by_name(b, a);
    });
    return std::pair{v->name, v->version};
  }
  std::sort(bases.begin(), bases.end(), by_name);
  std::stable_partition(bases.begin(), bases.end(), [](const Value* v) { return v->tensor.is_contiguous(); });
  for (const Value* base : bases)
    if (auto name = view_of(*base, t)) return std::pair{*name, base->version};
  for (const auto& [k, u] : unexported_)  // a view of an output without an ONNX form
    if (u.first.storage() == t.storage()) fail("[onnx.export] ", u.second);
  for (const auto& [k, v] : values_)
    if (v.traced && v.tensor.storage() == t.storage())
      fail("[onnx.export] a ", dtype_name(t.dtype()), " ", shape_str(t.shape()), " view of the traced value '", v.name,
           "' was made without an op, and it reads memory outside that value; build it with ops");
  return std::nullopt;
}

namespace {

/** Calls fn(i, storage position) for each element of t in order. */
template <class Fn> void for_each_position(const Tensor& t, Fn fn) {
  std::vector<int64_t> at(static_cast<size_t>(t.dim()), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t pos = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) pos += at[d] * t.stride(d);
    fn(i, pos);
    for (int64_t d = t.dim() - 1; d >= 0 && ++at[d] == t.size(d); --d) at[d] = 0;
  }
}

/** For each element of t (t's shape), its index among b's elements in order; nullopt where one
 *  is none of b's, or, with `distinct`, where two of b's elements are one element of memory (a
 *  write through b could not reach both). */
std::optional<Tensor> flat_positions(const Tensor& b, const Tensor& t, bool distinct) {
  // b's flat index of a storage position: its distance from b's start when b is contiguous,
  // else looked up; -1 for a position outside b.
  std::unordered_map<int64_t, int64_t> index_of;
  bool overlaps = false;
  if (!b.is_contiguous())
    for_each_position(b, [&](int64_t i, int64_t pos) { overlaps = !index_of.emplace(pos, i).second || overlaps; });
  if (distinct && overlaps) return std::nullopt;
  auto flat_index = [&](int64_t pos) -> int64_t {
    if (b.is_contiguous())
      return pos >= b.storage_offset() && pos < b.storage_offset() + b.numel() ? pos - b.storage_offset() : -1;
    auto it = index_of.find(pos);
    return it == index_of.end() ? -1 : it->second;
  };
  Tensor index = empty(t.shape(), {.dtype = DType::Int64});
  int64_t* out = index.data_ptr<int64_t>();
  bool covered = true;
  for_each_position(t, [&](int64_t i, int64_t pos) {
    out[i] = flat_index(pos);
    covered = covered && out[i] >= 0;
  });
  if (!covered) return std::nullopt;
  return index;
}

/** Whether every element of t is one of whole's (each of whole's once, with `distinct`). */
bool holds(const Tensor& whole, const Tensor& t, bool distinct) {
  return whole.is_contiguous() ? within(t, whole) : flat_positions(whole, t, distinct).has_value();
}

}  // namespace

std::optional<std::string> GraphBuilder::view_of(const Value& base, const Tensor& t) {
  const Tensor& b = base.tensor;
  std::string name = fresh("view");
  if (b.is_contiguous() && t.is_contiguous() && t.storage_offset() == b.storage_offset() && t.numel() == b.numel()) {
    node("Reshape", {base.name, shape_value(std::vector<int64_t>(t.shape().begin(), t.shape().end()))}, {name});
    return name;
  }
  std::optional<Tensor> index = flat_positions(b, t, false);
  if (!index) return std::nullopt;
  std::string flat = fresh("flat");
  node("Reshape", {base.name, ints({-1})}, {flat});
  set_attr(node("Gather", {flat, initializer(*index, fresh("view_index"))}, {name}), "axis", int64_t(0));
  return name;
}

void GraphBuilder::check_version(const Value& v, uint32_t version, const std::string& reader) const {
  if (version == v.version) return;
  fail("[onnx.export] ", reader, " reads a ", dtype_name(v.tensor.dtype()), " ", shape_str(v.tensor.shape()), " value ",
       v.producer.empty() ? std::string("(an input of the function)") : "computed by op '" + v.producer + "'",
       " that was then written in place by code outside the op table (a kernel called directly); the graph would read "
       "it from before the write");
}

void GraphBuilder::note_calls(const std::vector<CapturedCall>& calls) { note_calls(calls, false); }

void GraphBuilder::note_calls(const std::vector<CapturedCall>& calls, bool parts) {
  for (const CapturedCall& call : calls) {
    note_calls(call.inner, true);  // a call's parts finished before it did
    for (const Tensor& in : call.inputs)
      if (in.defined()) read_.insert(in.storage().get());
    for (size_t i = 0; i < call.outputs.size() && i < call.output_versions.size(); ++i) {
      const Tensor& out = call.outputs[i];
      if (!out.defined()) continue;
      writes_[out.storage().get()].insert(call.output_versions[i]);
      if (call.writes_in_place(i)) written_in_place_.insert(out.storage().get());
      else if (parts) parts_[out.storage().get()].emplace_back(&call, i);
    }
  }
}

namespace {

/** Whether part is one of call's parts, at any depth. */
bool holds_part(const CapturedCall& call, const CapturedCall* part) {
  return std::ranges::any_of(call.inner, [&](const CapturedCall& c) { return &c == part || holds_part(c, part); });
}

}  // namespace

// A composite's intermediate that its gradient saved (the centred x of batch_norm, the view
// of a weight a composed product kept) is read by the backward's ops; as a constant it would
// freeze the value of one trace. The call that made it is emitted instead, if t still holds
// what that call left: the same version and the same bytes (a kernel of the op around it may
// have written into it: the state of a recurrent layer).
//
// Several parts may have made the same view of the same memory with the same bytes: under vmap
// a broadcast gradient is a stride-0 view, and the backward of a reshape gives back the layout
// the forward started from. Any of them holds t's value, but only the one that finished first
// is safe to emit: its inputs were made before it, so the parts emitted for them finished
// earlier still, and the search cannot come back to a part whose emission is under way.
bool GraphBuilder::emit_part_making(const Tensor& t, std::optional<uint32_t> version) {
  if (!emitter_ || !t.defined()) return false;
  auto found = parts_.find(t.storage().get());
  if (found == parts_.end()) return false;
  // A batch of a vmap around the trace has no bytes of its own to hash: its version decides,
  // as it does for a value read as it was before a later write (its bytes are gone).
  const bool by_version = batching::level(t) > 0 || (version && *version != t.version());
  std::vector<const CapturedCall*> makers;
  for (const auto& [part, i] : found->second) {
    const Tensor& out = part->outputs[i];
    const uint64_t made = i < part->output_hashes.size() ? part->output_hashes[i] : 0;
    if (same_view(out, t) && version.value_or(t.version()) == part->output_versions[i] &&
        (by_version || (made != 0 && graph::content_hash(t) == made)))
      makers.push_back(part);
  }
  const CapturedCall* unemittable = nullptr;
  for (const CapturedCall* part : makers) {
    // A part of another maker is how that one computed it (a batched sort's transpose of its
    // kernel's buffer): the maker's own rule emits it whole, its kernel's buffer included.
    if (std::ranges::any_of(makers, [&](const CapturedCall* m) { return holds_part(*m, part); })) continue;
    if (emitted_parts_.contains(part)) continue;
    if (!can_emit_(*this, *part)) {
      unemittable = unemittable ? unemittable : part;
      continue;
    }
    emitted_parts_.insert(part);
    emitter_(*this, *part);
    return values_.contains(key(t)) || same_value(t);
  }
  // As a constant, t would hold this trace's value at every run: a wrong answer from the second
  // call on (a batching rule that ran an internal op on the physical tensor).
  if (unemittable)
    fail<RuntimeError>("[onnx.export] internal: the graph reads a ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                       " value that op '", unemittable->op,
                       "' computed inside another op, and that op has no graph form; it would be frozen as a "
                       "constant");
  return false;
}

void GraphBuilder::bind_example(const Tensor& t, uint32_t version) {
  // Inside vmap a batched tensor stands for one example of its physical tensor. The graph
  // computes with physical tensors (the batching rules' calls, emitted as parts); a call on
  // examples, recorded around them, computes from zeros of an example's shape, nodes nothing
  // else uses. (Not the physical tensor's first example: that tensor may have been written
  // since, and it may be no value of the graph as it was then.)
  std::string name = fresh("example");
  node("Expand", {scalar(0.0, t.dtype()), shape_value(std::vector<int64_t>(t.shape().begin(), t.shape().end()))},
       {name});
  values_[key(t)] = {name, DynamicDims(static_cast<size_t>(t.dim()), false), t, true, version, "an example"};
}

bool GraphBuilder::writes_batched(const CapturedCall& call) const {
  for (size_t i = 0; i < call.outputs.size(); ++i)
    if (call.writes_in_place(i) && batching::level(call.outputs[i]) > outer_level_) return true;
  return false;
}

void GraphBuilder::bind_batched_outputs(const CapturedCall& call) {
  for (size_t i = 0; i < call.outputs.size(); ++i)
    if (batching::level(call.outputs[i]) > outer_level_) bind_example(call.outputs[i], output_version(call, i));
}

void GraphBuilder::bind_before_write(const Tensor& t, uint32_t written) {
  // The latest version a part left t at before the write (a batching rule's physical view,
  // written by the rule's copy_ before anything read it).
  auto found = parts_.find(t.storage().get());
  if (found == parts_.end()) return;
  std::optional<uint32_t> before;
  for (const auto& [part, i] : found->second)
    if (const uint32_t v = part->output_versions[i]; same_view(part->outputs[i], t) && v < written)
      before = std::max(before.value_or(v), v);
  if (before) emit_part_making(t, before);
}

void GraphBuilder::emit_parts(const CapturedCall& call) {
  if (!emitter_) fail<RuntimeError>("[onnx.export] internal: no emitter for the parts of '", call.op, "'");
  for (const CapturedCall& part : call.inner)
    if (emitted_parts_.insert(&part).second) emitter_(*this, part);
}

std::vector<std::pair<Tensor, std::string>> GraphBuilder::written_state() const {
  std::vector<std::pair<Tensor, std::string>> written;
  for (const auto& [name, t] : params_)
    if (auto it = values_.find(key(t)); it != values_.end() && it->second.traced)
      written.emplace_back(t, it->second.name);
  return written;
}

const GraphBuilder::Value* GraphBuilder::same_value(const Tensor& t) const {
  if (auto it = values_.find(key(t)); it != values_.end()) return &it->second;
  // Of several such handles, the latest version (then the first name): an order of their own,
  // not the map's, so that two traces of one function make the same graph.
  const Value* found = nullptr;
  for (const auto& [k, v] : values_)
    if (v.traced && same_view(v.tensor, t) &&
        (!found || v.version > found->version || (v.version == found->version && v.name < found->name)))
      found = &v;
  return found;
}

std::optional<std::string> GraphBuilder::constant_name(const Tensor& t) const {
  auto it = values_.find(key(t));
  if (it == values_.end() || it->second.traced) return std::nullopt;
  return it->second.name;
}

const GraphBuilder::Value* GraphBuilder::earlier(const Tensor& t, uint32_t version) const {
  auto found = earlier_.find(key(t));
  if (found == earlier_.end()) return nullptr;
  auto it = found->second.find(version);
  return it == found->second.end() ? nullptr : &it->second;
}

std::pair<const void*, const GraphBuilder::Value*> GraphBuilder::earlier_holding(const Tensor& t,
                                                                                 uint32_t version) const {
  // The first by name, not by the map's addresses: two traces of one function make one graph.
  std::pair<const void*, const Value*> found{nullptr, nullptr};
  for (const auto& [k, versions] : earlier_)
    if (auto it = versions.find(version); it != versions.end() && it->second.tensor.storage() == t.storage() &&
                                          !batching::level(it->second.tensor) && holds(it->second.tensor, t, false) &&
                                          (!found.second || it->second.name < found.second->name))
      found = {k, &it->second};
  return found;
}

void GraphBuilder::check_inputs(const CapturedCall& call) {
  auto& frame = read_as_of_.emplace_back();
  for (size_t i = 0; i < call.inputs.size() && i < call.input_versions.size(); ++i) {
    if (!call.inputs[i].defined()) continue;
    const Tensor& in = call.inputs[i];
    if (batching::level(in) > outer_level_) continue;  // an example: read by no result (see value())
    // A part's result first read here, after a write into its memory (a vmap's in-place write
    // into a physical tensor): the part that made the value this call read is its node.
    if (in.version() != call.input_versions[i] && !same_value(in)) emit_part_making(in, call.input_versions[i]);
    // An in-place op records the tensor it wrote after writing it (a view shares its input's
    // memory without writing it: its input is read as any other).
    bool written = false;
    for (size_t o = 0; o < call.outputs.size(); ++o)
      written = written ||
                (call.outputs[o].defined() && call.outputs[o].storage() == in.storage() && call.writes_in_place(o));
    if (written) continue;
    if (const Value* read = earlier(in, call.input_versions[i])) {
      auto it = values_.find(key(in));
      if (it == values_.end() || it->second.version != call.input_versions[i]) {
        // The latest value, or none where the write made this handle stale (read again from the
        // value written).
        frame.push_back({key(in), it == values_.end() ? Value{} : it->second, read->name});
        values_[key(in)] = *read;
        continue;
      }
    }
    if (const Value* v = same_value(in);
        in.version() != call.input_versions[i] && !(v && v->version == call.input_versions[i])) {
      // A handle no op made (a batching rule's expand), or another handle of a part's result,
      // of a value written since the call read it: its elements come from that value as it was,
      // bound for this call.
      if (auto [k, read] = earlier_holding(in, call.input_versions[i]); read) {
        auto it = values_.find(k);
        frame.push_back({k, it == values_.end() ? Value{} : it->second, read->name});
        values_[k] = *read;
        continue;
      }
    }
    if (const Value* v = same_value(in); v && v->traced) {
      check_version(*v, call.input_versions[i], "input " + std::to_string(i) + " of op '" + call.op + "'");
    } else if (in.version() != call.input_versions[i]) {
      // Live state (a parameter a training step updates) read, then written by an op the
      // graph follows (its next version is one an op left): the program reads it as it is at
      // each run and writes it back.
      const bool live = param_name(in) || name_live_leaves_;
      auto w = writes_.find(in.storage().get());
      if (live && w != writes_.end() && w->second.contains(call.input_versions[i] + 1)) continue;
      // A constant or parameter written after the op read it (an optimizer's step() inside the
      // function): the graph would hold neither the value read nor the write.
      fail("[onnx.export] op '", call.op, "' reads a ", dtype_name(in.dtype()), " ", shape_str(in.shape()),
           " tensor that the function then writes in place", in.requires_grad() ? " (a parameter)" : "",
           "; only ops' results are followed: write the update functionally (optimizer.update and "
           "apply_updates, as optax does)");
    }
  }
}

void GraphBuilder::replay(const CapturedCall& call) {
  std::vector<std::string> inputs, outputs;
  for (const Tensor& t : call.inputs) inputs.push_back(t.defined() ? value(t) : std::string());
  for (size_t i = 0; i < call.outputs.size(); ++i) outputs.push_back(output(call, i));
  ::onnx::NodeProto& n = node("UgReplay", inputs, outputs);
  GraphBuilder* root = this;
  while (root->parent_) root = root->parent_;
  set_attr(n, "index", static_cast<int64_t>(root->replays_.size()));
  set_attr(n, "op", call.op);
  for (const char* flag : {"effect", "size_free"})
    if (has_attr(call, flag)) set_attr(n, flag, attr_int(call, flag));
  // Under free_sizes the call's attributes (a layer norm's row length) go with it, so that
  // two traces whose closures differ there are different graphs.
  if (sizes_free())
    for (const auto& attr : call.attrs)  // not a structured binding: clang 14 cannot capture one
      if (attr.first != "effect" && attr.first != "size_free" && attr.first != "no_grad")
        std::visit([&n, &attr](const auto& x) { set_attr(n, "ug_" + attr.first, x); }, attr.second);
  root->replays_.push_back(call.replay);
}

std::string GraphBuilder::stopped(const std::string& name) {
  if (auto it = stopped_.find(name); it != stopped_.end()) return it->second;
  const std::string out = fresh("stop_gradient");
  ::onnx::NodeProto& n = node("UgReplay", {name}, {out});
  GraphBuilder* root = this;
  while (root->parent_) root = root->parent_;
  set_attr(n, "index", static_cast<int64_t>(root->replays_.size()));
  set_attr(n, "op", std::string("stop_gradient"));
  root->replays_.push_back([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].detach()}; });
  stopped_.emplace(name, out);
  return out;
}

std::string GraphBuilder::written_into(const Value& base, const Tensor& t, const std::string& value) {
  const Tensor& b = base.tensor;  // holding every element of t, each once (see output())
  const Tensor index = flat_positions(b, t, true).value().reshape({-1});
  const std::string flat = fresh("flat"), updates = fresh("flat"), scattered = fresh("scattered"),
                    name = fresh("written");
  node("Reshape", {base.name, ints({-1})}, {flat});
  node("Reshape", {value, ints({-1})}, {updates});
  set_attr(node("ScatterElements", {flat, initializer(index, fresh("view_index")), updates}, {scattered}), "axis",
           int64_t(0));
  node("Reshape", {scattered, shape_value(std::vector<int64_t>(b.shape().begin(), b.shape().end()))}, {name});
  return name;
}

void GraphBuilder::check_outputs(const CapturedCall& call) {
  if (!read_as_of_.empty()) {
    // Unless the call's own nodes bound the input anew.
    for (auto& [k, latest, read] : read_as_of_.back()) {
      auto it = values_.find(k);
      if (it == values_.end() || it->second.name != read) continue;
      if (latest.name.empty()) values_.erase(it);
      else it->second = std::move(latest);
    }
    read_as_of_.pop_back();
  }
  for (const auto& [base, view, value, version] : pending_writes_) {
    Value& b = values_.at(base);
    if (b.traced) earlier_[base].insert_or_assign(b.version, b);
    b.name = written_into(b, view, value);
    b.traced = true;
    b.version = version;
    b.producer = call.op;
  }
  pending_writes_.clear();
  for (size_t i = 0; i < call.outputs.size(); ++i) {
    const Tensor& out = call.outputs[i];
    if (out.defined() && !values_.contains(key(out)))
      unexported_[key(out)] = {out, "output " + std::to_string(i) + " of op '" + call.op + "' (" +
                                        std::string(dtype_name(out.dtype())) + " " + shape_str(out.shape()) +
                                        ") has no ONNX form; leave it out of what the model returns"};
  }
}

DynamicDims GraphBuilder::dynamic(const Tensor& t) const {
  if (auto it = values_.find(key(t)); it != values_.end()) return it->second.dynamic;
  return DynamicDims(static_cast<size_t>(t.dim()), false);
}

std::optional<std::pair<std::string, int64_t>> GraphBuilder::size_source(int64_t size, int64_t position) const {
  if (!sizes_free() || size < 2) return std::nullopt;
  const GraphBuilder* root = this;
  while (root->parent_) root = root->parent_;
  // The same position first (a batch dim stays the batch dim); else, for a count (position
  // -1), the outermost dim of that size, and for a dim elsewhere the innermost one past the
  // first: a leading dim (the batch) serves its own position only, so that a batch that
  // happens to equal a feature size is not taken for it.
  for (const auto& [name, shape] : root->free_inputs_)
    if (position >= 0 && position < static_cast<int64_t>(shape.size()) && shape[position] == size)
      return std::make_pair(name, position);
  if (position < 0)
    for (const auto& [name, shape] : root->free_inputs_)
      for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
        if (shape[d] == size) return std::make_pair(name, d);
  for (auto in = root->free_inputs_.rbegin(); in != root->free_inputs_.rend(); ++in)
    for (int64_t d = static_cast<int64_t>(in->second.size()) - 1; d >= 1; --d)
      if (in->second[d] == size) return std::make_pair(in->first, d);
  return std::nullopt;
}

std::optional<std::string> GraphBuilder::size_value(int64_t size, int64_t position) {
  const auto source = size_source(size, position);
  if (!source) return std::nullopt;
  const std::string memo = source->first + ":" + std::to_string(source->second);
  if (auto it = size_values_.find(memo); it != size_values_.end()) return it->second;
  return size_values_[memo] = shape_of(source->first, source->second, source->second + 1);
}

std::string GraphBuilder::shape_of(const std::string& value, int64_t start, int64_t end) {
  std::string name = fresh("size");
  ::onnx::NodeProto& n = node("Shape", {value}, {name});
  set_attr(n, "start", start);
  set_attr(n, "end", end);
  return name;
}

std::optional<std::string> GraphBuilder::sized_constant(const Tensor& t, DType dtype) {
  if (!sizes_free() || (t.numel() < 2 && t.dim() > 0)) return std::nullopt;
  if (t.dim() == 0) {
    // A count divides a float (a mean); an integer constant is a class count or an index, which
    // a batch of that size must not be taken for.
    if (!is_floating(t.dtype()) || !is_floating(dtype)) return std::nullopt;
    const double v = t.to(DType::Float64).item<double>();
    if (v != std::floor(v) || v > 1e15) return std::nullopt;
    auto size = size_value(static_cast<int64_t>(v), -1);
    if (!size) return std::nullopt;
    std::string scalar = fresh("count");
    node("Reshape", {*size, ints({})}, {scalar});
    std::string name = fresh("count");
    set_attr(node("Cast", {scalar}, {name}), "to", static_cast<int64_t>(onnx_dtype(dtype)));
    return name;
  }
  bool reads = false;
  for (int64_t d = 0; d < t.dim(); ++d) reads = reads || size_source(t.size(d), d);
  if (!reads) return std::nullopt;
  const Tensor flat = t.contiguous().reshape({-1});
  const int64_t item = static_cast<int64_t>(itemsize(t.dtype()));
  const auto* bytes = static_cast<const unsigned char*>(flat.raw_data());
  for (int64_t i = 1; i < flat.numel(); ++i)
    if (std::memcmp(bytes, bytes + i * item, static_cast<size_t>(item)) != 0) return std::nullopt;
  const Tensor one = flat.slice(0, 0, 1).to(dtype).contiguous();
  std::string name = fresh("filled");
  set_attr(node("ConstantOfShape", {shape_value(std::vector<int64_t>(t.shape().begin(), t.shape().end()))}, {name}),
           "value", one);
  return name;
}

std::string GraphBuilder::shape_value(const std::vector<int64_t>& sizes) {
  std::vector<std::optional<std::string>> read;
  bool any = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    read.push_back(size_value(sizes[i], static_cast<int64_t>(i)));
    any = any || read.back();
  }
  if (!any) return ints(sizes);
  std::vector<std::string> parts;
  for (size_t i = 0; i < sizes.size(); ++i) parts.push_back(read[i] ? *read[i] : ints({sizes[i]}));
  std::string name = fresh("shape");
  set_attr(node("Concat", parts, {name}), "axis", int64_t{0});
  return name;
}

std::string GraphBuilder::ints(const std::vector<int64_t>& values) {
  ::onnx::TensorProto& init = *graph_.add_initializer();
  std::string name = fresh("ints");
  init.set_name(name);
  init.set_data_type(::onnx::TensorProto_DataType_INT64);
  init.add_dims(static_cast<int64_t>(values.size()));
  init.set_raw_data(values.data(), values.size() * sizeof(int64_t));
  return name;
}

std::string GraphBuilder::scalar(double value, DType dtype) {
  return initializer(full({}, value, {.dtype = dtype}), fresh("const"));
}

std::string GraphBuilder::fresh(const std::string& hint) {
  if (parent_) return parent_->fresh(hint);
  int64_t& n = counters_[hint];
  return hint + "_" + std::to_string(n++);
}

GraphBuilder::SourceScope::SourceScope(GraphBuilder& g, const std::string& where) : g_(g), set_(!where.empty()) {
  if (set_) previous_ = std::exchange(g_.where_, where);
}
GraphBuilder::SourceScope::~SourceScope() {
  if (set_) g_.where_ = std::move(previous_);
}

::onnx::NodeProto& GraphBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                      const std::vector<std::string>& outputs) {
  ::onnx::NodeProto& n = *graph_.add_node();
  n.set_op_type(op_type);
  n.set_name(fresh(op_type));
  if (!where_.empty()) n.set_doc_string(where_);
  for (const std::string& i : inputs) n.add_input(i);
  for (const std::string& o : outputs) n.add_output(o);
  return n;
}

std::string GraphBuilder::output(const CapturedCall& call, size_t i, std::optional<DynamicDims> dynamic) {
  const Tensor& out = call.outputs.at(i);
  if (!dynamic) {
    // Lined up on the right, like broadcasting: a dim stays symbolic where an input's dim of
    // the same size was.
    dynamic = DynamicDims(static_cast<size_t>(out.dim()), false);
    for (const Tensor& in : call.inputs) {
      if (!in.defined()) continue;
      DynamicDims d = this->dynamic(in);
      for (int64_t k = 1; k <= std::min(in.dim(), out.dim()); ++k)
        if (d[in.dim() - k] && in.size(-k) == out.size(-k)) (*dynamic)[out.dim() - k] = true;
    }
  }
  // An in-place op (its output is an input, or it is named so: copy_, fill_) gives the tensor
  // a new value, and every other handle of the same elements (a detach()) that value. A view
  // of some of its elements (x[0] read before x[0] = ...) is forgotten, so that a later read
  // takes it from the new value, as the eager view sees the write. A write into a view of
  // part of a value would leave the rest of the graph's value stale: refused. A replayed
  // effect writes the live tensor itself at each run.
  const bool in_place = call.writes_in_place(i);
  std::vector<const void*> handles, stale, rest;
  const void* base = nullptr;
  if (in_place && !has_attr(call, "effect")) {
    if (!same_value(out)) bind_before_write(out, output_version(call, i));
    for (const auto& [k, v] : values_) {
      if (k == key(out) || v.tensor.storage() != out.storage()) continue;
      if (batching::level(v.tensor) > outer_level_) continue;  // an example: no layout of its own
      if (same_view(v.tensor, out)) handles.push_back(k);
      else if (within(v.tensor, out)) stale.push_back(k);
      else rest.push_back(k);
    }
    // A write into part of a value (x[0].mul_(2)): the value holding all of it, each element
    // once (the largest, which the views of other parts are read from again; then the latest,
    // then the first name), takes the new elements, every other view is read again from it.
    auto order = [](const Value& v) { return std::tuple(v.tensor.numel(), v.version); };
    for (const void* k : rest) {
      const Value& v = values_.at(k);
      if (!holds(v.tensor, out, true)) continue;
      const Value* b = base ? &values_.at(base) : nullptr;
      if (!b || order(v) > order(*b) || (order(v) == order(*b) && v.name < b->name)) base = k;
    }
    if (!rest.empty() && !base)
      fail("[onnx.export] in-place op '", call.op, "' writes a view (", dtype_name(out.dtype()), " ",
           shape_str(out.shape()),
           ") of memory that another view of the trace reads, and no traced value holds "
           "all of it; write the whole tensor instead: index assignment (x[i] = v), x.index_put(...) or "
           "ug.where(mask, v, x)");
    for (const void* k : rest)
      if (k != base) stale.push_back(k);
    // The scatter's positions are those of the traced shape.
    if (base && std::ranges::any_of(values_.at(base).dynamic, [](bool d) { return d; }))
      fail("[onnx.export] in-place op '", call.op, "' writes a view (", dtype_name(out.dtype()), " ",
           shape_str(out.shape()),
           ") of part of a value with dynamic axes, whose positions change with its "
           "size; write the whole tensor instead: index assignment (x[i] = v), x.index_put(...) or "
           "ug.where(mask, v, x)");
  }
  for (const void* k : stale) {
    if (const Value& v = values_.at(k); v.traced) earlier_[k].insert_or_assign(v.version, v);
    values_.erase(k);
  }
  // Live state first written here, never read: a program writes its value back all the same.
  if (in_place && !same_value(out) && !param_name(out) && name_live_leaves_)
    params_.emplace_back(fresh("written"), out);
  std::string name = fresh(call.op);
  // An in-place write under no_grad leaves a tensor that requires grad as it was (a parameter).
  if (stop_no_grad_ && !in_place && has_attr(call, "no_grad") && out.is_floating_point()) no_grad_made_.insert(name);
  const uint32_t version = output_version(call, i);
  if (auto it = values_.find(key(out)); in_place && it != values_.end() && it->second.traced)
    earlier_[key(out)].insert_or_assign(it->second.version, it->second);
  values_[key(out)] = {name, *dynamic, out, true, version, call.op};
  if (base) pending_writes_.emplace_back(base, out, name, version);
  for (const void* k : handles) {
    Value& v = values_.at(k);
    if (v.traced) earlier_[k].insert_or_assign(v.version, v);
    v = {name, *dynamic, v.tensor, true, version, call.op};
  }
  return name;
}

void set_attr(::onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_INT);
  a->set_i(value);
}

void set_attr(::onnx::NodeProto& node, const std::string& name, double value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(static_cast<float>(value));
  // ONNX's FLOAT is 32 bits: a value it rounds (layer_norm's 1e-5) also goes, exactly, in the
  // doc string, which the parser reads back, so that a float64 program computes with the eager
  // value (a layer norm's gradient moved by 1e-6 with the rounded epsilon). Other runtimes
  // read the float.
  if (static_cast<double>(a->f()) != value) {
    char exact[32];
    std::snprintf(exact, sizeof exact, "%a", value);
    a->set_doc_string(exact);
  }
}

void set_attr(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_INTS);
  for (int64_t v : values) a->add_ints(v);
}

void set_attr(::onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_STRING);
  a->set_s(value);
}

void set_attr(::onnx::NodeProto& node, const std::string& name, const Tensor& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_TENSOR);
  const Tensor flat = value.contiguous();
  ::onnx::TensorProto& t = *a->mutable_t();
  t.set_data_type(onnx_dtype(flat.dtype()));
  for (int64_t s : flat.shape()) t.add_dims(s);
  t.set_raw_data(flat.raw_data(), static_cast<size_t>(flat.nbytes()));
}

const AttrValue& attr(const CapturedCall& call, const std::string& name) {
  for (const auto& [n, v] : call.attrs)
    if (n == name) return v;
  fail<RuntimeError>("[onnx.export] op '", call.op, "' was traced without its attribute '", name, "'");
}

bool has_attr(const CapturedCall& call, const std::string& name) {
  return std::any_of(call.attrs.begin(), call.attrs.end(), [&](const auto& a) { return a.first == name; });
}

int64_t attr_int(const CapturedCall& call, const std::string& name) { return std::get<int64_t>(attr(call, name)); }
double attr_float(const CapturedCall& call, const std::string& name) { return std::get<double>(attr(call, name)); }
const std::vector<int64_t>& attr_ints(const CapturedCall& call, const std::string& name) {
  return std::get<std::vector<int64_t>>(attr(call, name));
}
const std::string& attr_string(const CapturedCall& call, const std::string& name) {
  return std::get<std::string>(attr(call, name));
}

}  // namespace ug::onnx
