#include "ug/autograd/custom_function.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ug/autograd/custom_watch.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/graph/record.h"

namespace ug {

namespace autograd {

namespace {
thread_local CustomRuleWatch* current_watch = nullptr;
/** custom_calls in progress on this thread: a program calls their nodes' rules back, so a
 *  watch need not note them. */
thread_local int open_custom_calls = 0;
}  // namespace

CustomRuleWatch::CustomRuleWatch() : previous_(current_watch) { current_watch = this; }
CustomRuleWatch::~CustomRuleWatch() { current_watch = previous_; }

std::vector<std::string> CustomRuleWatch::unapplied_reached_from(const std::vector<Tensor>& outputs) const {
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  for (const Tensor& t : outputs)
    if (const AutogradMeta* m = t.defined() ? meta_if(t) : nullptr; m && m->grad_fn) stack.push_back(m->grad_fn.get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const Edge& e : n->next_edges())
      if (e.valid()) stack.push_back(e.node.get());
  }
  std::vector<std::string> names;
  for (const Noted& n : nodes_)
    if (!*n.applied && seen.contains(n.node.get()) && std::find(names.begin(), names.end(), n.name) == names.end())
      names.push_back(n.name);
  return names;
}

void CustomRuleWatch::note(const char* name, Ref<Node> node, std::shared_ptr<const bool> applied) {
  if (current_watch && open_custom_calls == 0)
    current_watch->nodes_.push_back({name, std::move(node), std::move(applied)});
}

}  // namespace autograd

namespace {

/** One checked gradient per input: the count must match, each defined gradient must have its
 *  input's shape, and it takes its input's dtype (torch's validate_outputs does the same). */
std::vector<Tensor> checked(const char* name, const Tensors& grads, const std::vector<Node::OutputInfo>& want,
                            const char* what, const char* of) {
  if (grads.size() != want.size())
    fail("[", name, "] the ", what, " returned ", grads.size(), " values for ", want.size(), " ", of, "s");
  std::vector<Tensor> out(grads.begin(), grads.end());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined()) continue;
    if (out[i].shape() != want[i].shape)
      fail("[", name, "] the ", what, " returned shape ", out[i].shape(), " for ", of, " ", i, " of shape ",
           want[i].shape);
    if (out[i].dtype() != want[i].dtype) out[i] = out[i].to(want[i].dtype);
  }
  return out;
}

}  // namespace

Tensors custom_function(const char* name, const Tensors& inputs, const Tensors& outputs, CustomVjp vjp, CustomJvp jvp,
                        const Tensors& saved) {
  Tensors results;
  results.reserve(outputs.size());
  for (const Tensor& o : outputs) {
    if (autograd::requires_grad(o))
      fail("[", name, "] its outputs must be computed without recording (under no_grad, from detached inputs)");
    results.push_back(o.detach());  // a fresh tensor to link, never one the caller holds elsewhere
  }
  std::vector<const Tensor*> in_ptrs, out_ptrs;
  std::vector<Node::OutputInfo> in_info;
  for (const Tensor& t : inputs) {
    in_ptrs.push_back(&t);
    in_info.push_back({t.shape(), t.dtype(), t.device()});
  }
  for (const Tensor& t : results) out_ptrs.push_back(&t);
  bool records = false;
  for (const Tensor& t : inputs) records |= autograd::needs_grad({&t});
  if (records) {
    std::vector<graph::Save> keep;
    for (const Tensor& t : saved) {
      auto out = std::find_if(outputs.begin(), outputs.end(), [&](const Tensor& o) { return &o.impl() == &t.impl(); });
      keep.push_back(out == outputs.end() ? graph::input(t) : graph::output(results[out - outputs.begin()]));
    }
    auto applied = std::make_shared<bool>(false);
    autograd::record(name, in_ptrs, out_ptrs, keep,
                     [name, vjp = std::move(vjp), in_info, applied](Saved s, std::vector<Tensor>&& grads) {
                       *applied = true;
                       return checked(name, vjp(Tensors(s.begin(), s.end()), Tensors(grads.begin(), grads.end())),
                                      in_info, "backward", "input");
                     });
    for (const Tensor& r : results)
      if (const AutogradMeta* m = autograd::meta_if(r); m && m->grad_fn) {
        autograd::CustomRuleWatch::note(name, m->grad_fn, applied);
        break;
      }
  }
  bool has_tangents = false;
  if (forward::active())
    for (const Tensor& t : inputs) has_tangents |= forward::has_tangent(t);
  if (has_tangents) {
    if (!jvp)
      fail("[", name,
           "] has no forward-mode rule: forward mode (jvp) cannot go through it (define its jvp, or "
           "use reverse mode)");
    std::vector<Node::OutputInfo> out_info;
    for (const Tensor& t : results) out_info.push_back({t.shape(), t.dtype(), t.device()});
    forward::propagate(in_ptrs, out_ptrs, [&](const std::vector<Tensor>& tangents) {
      return checked(name, jvp(Tensors(tangents.begin(), tangents.end())), out_info, "forward-mode rule", "output");
    });
  }
  return results;
}

const graph::OpDef kCustomFunction("custom_function");

Tensors custom_call(const char* name, const Tensors& inputs, const std::function<Tensors()>& run, graph::Replay again) {
  graph::OpCall call(kCustomFunction);
  Tensors outputs;
  {
    ++autograd::open_custom_calls;
    struct Close {
      ~Close() { --autograd::open_custom_calls; }
    } close;
    outputs = run();
  }
  if (call.capturing()) {
    call.set_attrs({{"name", std::string(name)}});
    // The call runs again on whatever inputs it is given: no size of this one is held.
    call.set_replay(std::move(again), graph::ReplaySizes::None);
  }
  std::vector<const Tensor*> in, out;
  for (const Tensor& t : inputs) in.push_back(&t);
  for (const Tensor& t : outputs) out.push_back(&t);
  call.finish(in, out);
  return outputs;
}

Tensors custom_function(const char* name, const Tensors& inputs,
                        std::function<CustomForward(const Tensors& detached)> forward) {
  auto run = [&] {
    CustomForward f;
    Tensors detached;
    for (const Tensor& t : inputs) detached.push_back(t.detach());
    {
      NoGradGuard no_grad;
      f = forward(detached);
    }
    // A saved input is saved as the caller's tensor, with its history (higher derivatives).
    for (Tensor& s : f.saved)
      for (size_t i = 0; i < inputs.size(); ++i)
        if (s.defined() && &s.impl() == &detached[i].impl()) s = inputs[i];
    return custom_function(name, inputs, f.outputs, std::move(f.vjp), std::move(f.jvp), f.saved);
  };
  auto again = [name, forward](const Tensors& in) { return custom_function(name, in, forward); };
  return custom_call(name, inputs, run, std::move(again));
}

}  // namespace ug
