#include "ug/autograd/custom_function.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ug/autograd/custom_watch.h"
#include "ug/graph/forward.h"
#include "ug/graph/record.h"

namespace ug {

namespace autograd {

namespace {
thread_local CustomRuleWatch* current_watch = nullptr;
}

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
  if (current_watch) current_watch->nodes_.push_back({name, std::move(node), std::move(applied)});
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

}  // namespace ug
