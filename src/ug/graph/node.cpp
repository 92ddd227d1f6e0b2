#include "ug/graph/node.h"

#include <atomic>

#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/saved_hooks_state.h"
#include "ug/core/batching.h"

namespace ug {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};

/** A new handle on t's data (and batch, inside vmap) with no autograd record of its own. A
 *  batched t keeps its physical tensor as it is: the history there is an outer transform's
 *  (grad of vmap of grad), which a saved output needs as much as a saved input has it. */
Tensor alias(const Tensor& t) {
  if (const BatchInfo* b = t.impl().batch()) return batching::wrap(Tensor(b->physical), b->level);
  return batching::shallow_copy(t);
}

thread_local std::shared_ptr<const SavedTensorHooks> current_hooks;
}  // namespace

SavedTensorHooksGuard::SavedTensorHooksGuard(std::shared_ptr<const SavedTensorHooks> hooks)
    : outer_(std::move(current_hooks)) {
  current_hooks = std::move(hooks);
}

SavedTensorHooksGuard::~SavedTensorHooksGuard() { current_hooks = std::move(outer_); }

bool saved_tensor_hooks_installed() { return current_hooks != nullptr; }

Node::Node(std::vector<Edge> next_edges)
    : next_edges_(std::move(next_edges)), sequence_nr_(g_next_sequence_nr.fetch_add(1)) {}

Node::~Node() = default;

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : version_(t.version()), is_output_(is_output) {
  if (current_hooks && t.defined()) {
    // The hooks keep what they like; an output is handed over without its grad_fn (a cycle).
    hooks_ = current_hooks;
    if (is_output)
      if (AutogradMeta* m = autograd::meta_if(t)) output_nr_ = m->output_nr;
    packed_ = hooks_->pack(is_output ? alias(t) : t);
    return;
  }
  if (!is_output) {
    data_ = t;
    return;
  }
  // An output keeps only its data (and forward-mode tangents): holding its grad_fn (this
  // very node) would be a cycle.
  data_ = alias(t);
  if (forward::active()) forward::copy_tangents(t, data_);
  if (AutogradMeta* m = autograd::meta_if(t)) output_nr_ = m->output_nr;
}

Tensor SavedTensor::unpack(Node* owner, const char* op) const {
  if (hooks_) return unpack_hooked(owner, op);
  if (!data_.defined()) return data_;
  if (data_.version() != version_)
    fail<RuntimeError>(
        "[backward] one of the tensors needed for gradient computation has been modified by an "
        "in-place operation: a ",
        data_.dtype(), " tensor of shape ", data_.shape(), " saved by ", op, " is at version ", data_.version(),
        "; expected version ", version_, ". Use out-of-place ops (or clone()) before changing it in place.");
  if (!is_output_ || !GradMode::is_enabled()) return data_;
  return reattach(data_, owner);
}

Tensor SavedTensor::unpack_hooked(Node* owner, const char* op) const {
  Tensor t = hooks_->unpack(packed_);
  if (!t.defined())
    fail<RuntimeError>("[backward] a saved-tensor unpack hook returned no tensor for a tensor saved by ", op);
  if (!is_output_ || !GradMode::is_enabled()) return t;
  return reattach(t, owner);
}

/** Double backward: gives a saved output its place in the graph again. */
Tensor SavedTensor::reattach(const Tensor& data, Node* owner) const {
  Tensor t = alias(data);
  if (forward::active()) forward::copy_tangents(data, t);
  AutogradMeta& m = autograd::meta(t);
  m.grad_fn = Ref<Node>(owner);
  m.output_nr = output_nr_;
  return t;
}

void SavedTensor::take_tangents(const Tensor& output) {
  if (is_output_ && data_.defined()) forward::copy_tangents(output, data_);
}

void SavedTensor::reset() {
  data_ = Tensor();
  hooks_.reset();
  packed_.reset();
}

AccumulateGrad::AccumulateGrad(Tensor leaf) : Node({}), leaf_(std::move(leaf)) {
  outputs().push_back({leaf_.shape(), leaf_.dtype(), leaf_.device()});
}

AccumulateGrad::~AccumulateGrad() {
  if (AutogradMeta* m = autograd::meta_if(leaf_))
    if (m->grad_accumulator == this) m->grad_accumulator = nullptr;
}

Tensor AccumulateGrad::run_hooks(Tensor g) const {
  for (const GradHook& hook : autograd::meta(leaf_).leaf_hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = replaced;
  }
  return g;
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&&) {
  fail<RuntimeError>("[backward] AccumulateGrad is run by the engine (autograd/engine.cpp), which adds with ops");
}

void throw_graph_freed(const char* op) {
  fail<RuntimeError>(
      "[backward] trying to backward through the graph a second time (or to use saved tensors "
      "after they were freed) at ",
      op,
      ". Pass retain_graph=True to the first backward "
      "if you need to backward through the graph again.");
}

namespace autograd {

AutogradMeta* meta_if(const Tensor& t) { return static_cast<AutogradMeta*>(t.impl().autograd_meta()); }

AutogradMeta& meta(const Tensor& t) {
  AutogradMetaBase* m = t.impl().autograd_meta();
  if (!m) {
    auto fresh = std::make_unique<AutogradMeta>();
    m = fresh.get();
    t.impl().set_autograd_meta(std::move(fresh));
  }
  return *static_cast<AutogradMeta*>(m);
}

void refresh_view(const Tensor& t, AutogradMeta& m) {
  m.view_version = t.version();
  if (m.view_history) m.view_history(t, m.view_base);
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = meta_if(t);
  if (!m) return {};
  if (view_is_stale(t, *m)) [[unlikely]]
    refresh_view(t, *m);
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  if (!m->grad_accumulator) m->grad_accumulator = new AccumulateGrad(t);
  return {Ref<Node>(m->grad_accumulator), 0};
}

}  // namespace autograd
}  // namespace ug
