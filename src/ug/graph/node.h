// The recorded graph. Each differentiable op that runs while grad mode is on and an input
// requires grad leaves a Node: its derivative rule (a closure over saved tensors) and the
// edges to the nodes of its inputs. Leaves end in AccumulateGrad, which adds into .grad.
#pragma once

#include <cstdint>
#include <functional>
#include <any>
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

class Node;

/** Where a gradient flows: input `input_nr` of `node`. */
struct Edge {
  Ref<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return static_cast<bool>(node); }
};

using GradHook = std::function<Tensor(const Tensor&)>;

class Node : public RefCounted {
 public:
  explicit Node(std::vector<Edge> next_edges);
  ~Node() override;

  virtual const char* name() const = 0;
  /** Gradients for the node's inputs (one per next edge; undefined = none) from the
   *  gradients of its outputs (all defined: the engine fills missing ones with zeros). */
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  /** Frees saved tensors after a backward that does not retain the graph. */
  virtual void release_saved() {}
  /** Said before apply() in a backward that does not retain the graph: the node lets go of its
   *  saved tensors as it unpacks them, so its rule holds the only references and may drop each
   *  after its last use (a linear's input once the weight's gradient is made). */
  void release_saved_on_apply() { release_on_apply_ = true; }

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  /** Shapes and dtypes of the outputs, for zero gradients of unused outputs. */
  struct OutputInfo {
    Shape shape;
    DType dtype;
    Device device;
  };
  std::vector<OutputInfo>& outputs() { return outputs_; }
  /** Hooks on the gradient of output `nr` (Tensor.register_hook on non-leaves, retain_grad). */
  std::vector<std::pair<uint32_t, GradHook>>& output_hooks() { return output_hooks_; }
  /** Where the op ran forward (Python file:line), recorded in anomaly mode. */
  std::string& forward_trace() { return forward_trace_; }

 protected:
  std::vector<Edge> next_edges_;
  bool release_on_apply_ = false;

 private:
  uint64_t sequence_nr_;
  std::vector<OutputInfo> outputs_;
  std::vector<std::pair<uint32_t, GradHook>> output_hooks_;
  std::string forward_trace_;
};

/** Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks): while installed on a thread,
 *  every tensor an op saves for backward is given to pack, and backward gets it back from
 *  unpack applied to what pack returned. Activation checkpointing packs nothing and
 *  recomputes on unpack; offloading would pack a copy elsewhere. */
struct SavedTensorHooks {
  std::function<std::any(const Tensor&)> pack;
  std::function<Tensor(const std::any&)> unpack;
};

/** Installs hooks on this thread for its lifetime; the innermost installed hooks apply. */
class SavedTensorHooksGuard {
 public:
  explicit SavedTensorHooksGuard(std::shared_ptr<const SavedTensorHooks> hooks);
  ~SavedTensorHooksGuard();
  SavedTensorHooksGuard(const SavedTensorHooksGuard&) = delete;
  SavedTensorHooksGuard& operator=(const SavedTensorHooksGuard&) = delete;

 private:
  std::shared_ptr<const SavedTensorHooks> outer_;
};

/** A tensor kept for backward, with the version it had when saved: if an in-place op
 *  changes it before backward runs, unpacking raises instead of giving a wrong gradient.
 *  Under saved-tensor hooks it keeps what pack returned instead of the tensor. */
class SavedTensor {
 public:
  SavedTensor() = default;
  /** is_output: the tensor is an output of the saving node; it is kept without its
   *  grad_fn (that would be a cycle) and given the node back when unpacked. */
  SavedTensor(const Tensor& t, bool is_output);
  Tensor unpack(Node* owner, const char* op) const;
  /** A saved output takes `output`'s forward-mode tangents, set after the node saved it
   *  (graph::OpCall records the node first): forward mode over the backward reads them. */
  void take_tangents(const Tensor& output);
  void reset();
  bool defined() const { return data_.defined() || hooks_; }

 private:
  Tensor unpack_hooked(Node* owner, const char* op) const;
  Tensor reattach(const Tensor& data, Node* owner) const;

  Tensor data_;
  std::shared_ptr<const SavedTensorHooks> hooks_;  // set when packed
  std::any packed_;
  uint32_t version_ = 0;
  bool is_output_ = false;
  Ref<Node> grad_fn_;  // inputs keep their history, so double backward reaches them
  uint32_t output_nr_ = 0;
};

/** The node that ends every path at a leaf: adds the incoming gradient into leaf.grad. */
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);
  ~AccumulateGrad() override;
  const char* name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  const Tensor& leaf() const { return leaf_; }
  /** The leaf's hooks applied to g: backward and autograd.grad both run them. */
  Tensor run_hooks(Tensor g) const;

 private:
  Tensor leaf_;
};

/** The saved tensors a vjp rule reads, unpacked, in the order the op saved them. A rule may
 *  reset one after its last use: where the graph is not retained, that frees it there. */
using Saved = std::span<Tensor>;

[[noreturn]] void throw_graph_freed(const char* op);

/** The node an op call leaves (graph/op_call.h): the op's vjp rule and the tensors it saved,
 *  held in the node itself so that recording allocates little. vjp(Saved, grads) -> one
 *  gradient per input. */
template <class Vjp> class RuleNode final : public Node {
 public:
  RuleNode(const char* name, std::vector<Edge> next_edges, Vjp vjp)
      : Node(std::move(next_edges)), name_(name), vjp_(std::move(vjp)) {}
  const char* name() const override { return name_; }
  std::vector<SavedTensor>& saved() { return saved_; }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    if (!vjp_) throw_graph_freed(name_);
    constexpr size_t kInline = 4;  // most ops save fewer: unpack them without allocating
    if (saved_.size() <= kInline) {
      std::array<Tensor, kInline> s;
      const size_t n = saved_.size();
      for (size_t i = 0; i < n; ++i) s[i] = saved_[i].unpack(this, name_);
      return run(Saved(s.data(), n), std::move(grads));
    }
    std::vector<Tensor> s;
    s.reserve(saved_.size());
    for (const SavedTensor& k : saved_) s.push_back(k.unpack(this, name_));
    return run(Saved(s), std::move(grads));
  }
  void release_saved() override {
    saved_.clear();
    vjp_.reset();
  }

 private:
  /** The rule on the unpacked tensors; released first when asked (a rule that throws leaves a
   *  freed graph, which a second backward reports). */
  std::vector<Tensor> run(Saved s, std::vector<Tensor>&& grads) {
    if (!release_on_apply_) return (*vjp_)(s, std::move(grads));
    Vjp vjp = std::move(*vjp_);
    release_saved();
    return vjp(s, std::move(grads));
  }

  const char* name_;
  std::vector<SavedTensor> saved_;
  std::optional<Vjp> vjp_;
};

/** What autograd keeps on a tensor. */
struct AutogradMeta final : AutogradMetaBase {
  bool requires_grad = false;  // leaves only; a non-leaf requires grad iff it has grad_fn
  Tensor grad;
  Ref<Node> grad_fn;
  uint32_t output_nr = 0;
  AccumulateGrad* grad_accumulator = nullptr;  // not owned: the graph owns it
  bool retains_grad = false;
  /** Forward-mode tangents, by level (see forward.h). */
  std::vector<std::pair<int64_t, Tensor>> tangents;
  /** Where a non-leaf's retained grad lives: shared with the hook in its grad_fn, which
   *  must not own (or dangle to) the tensor itself. */
  std::shared_ptr<Tensor> retained_grad;
  std::vector<GradHook> leaf_hooks;  // hooks of a leaf, run before accumulation
  /** torch's post-accumulate-grad hooks: called with the leaf once its .grad holds the sum. */
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
  /** For a view made under grad mode or forward mode: the tensor whose memory it views, and
   *  the data version its grad_fn and tangents were made at. An in-place write into that memory
   *  since (through the base or another view) makes the view's history and tangents anew from
   *  the base's (refresh_view), as torch does. */
  Tensor view_base;
  uint32_t view_version = 0;
  /** Makes the view's history and forward-mode tangents those of its elements of the base
   *  (set by the view ops). */
  void (*view_history)(const Tensor& view, const Tensor& base) = nullptr;
};

namespace autograd {

/** The tensor's autograd record, created on first use. */
AutogradMeta& meta(const Tensor& t);
/** The record if it exists. */
AutogradMeta* meta_if(const Tensor& t);
/** Where gradients for t flow: its grad_fn, or its leaf's AccumulateGrad (made on demand);
 *  an invalid edge when t does not require grad. */
Edge gradient_edge(const Tensor& t);
/** Whether t is a view whose memory was written in place since its grad_fn was made. */
inline bool view_is_stale(const Tensor& t, const AutogradMeta& m) {
  return m.view_base.defined() && t.version() != m.view_version;
}
/** Gives a stale view (view_is_stale) the history and tangents of its elements of its base as
 *  it is now. */
void refresh_view(const Tensor& t, AutogradMeta& m);
/** torch's Tensor.register_post_accumulate_grad_hook on a leaf that requires grad: fn(leaf)
 *  runs after each backward has added into leaf.grad (not inside a compiled step's trace).
 *  Returns an id for remove_post_accumulate_grad_hook. */
size_t register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> fn);
void remove_post_accumulate_grad_hook(const Tensor& leaf, size_t id);

}  // namespace autograd
}  // namespace ug
