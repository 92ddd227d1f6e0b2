#include "ug/autograd/custom_function.h"

#include <algorithm>
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

std::vector<std::string> CustomRuleWatch::unapplied() const {
  std::vector<std::string> names;
  for (const auto& [name, applied] : nodes_)
    if (!*applied && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

std::shared_ptr<bool> CustomRuleWatch::note(const char* name) {
  if (!current_watch) return nullptr;
  auto applied = std::make_shared<bool>(false);
  current_watch->nodes_.emplace_back(name, applied);
  return applied;
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
    autograd::record(name, in_ptrs, out_ptrs, keep,
                     [name, vjp = std::move(vjp), in_info, applied = autograd::CustomRuleWatch::note(name)](
                         Saved s, std::vector<Tensor>&& grads) {
                       if (applied) *applied = true;
                       return checked(name, vjp(Tensors(s.begin(), s.end()), Tensors(grads.begin(), grads.end())),
                                      in_info, "backward", "input");
                     });
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
