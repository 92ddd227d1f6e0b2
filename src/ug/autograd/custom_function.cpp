#include "ug/autograd/custom_function.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ug/autograd/custom_watch.h"
#include "ug/core/batching.h"
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

/** Whether a derivative is asked of t: it requires grad while recording or carries a tangent,
 *  or, for a batched t, the physical tensor under it does (grad of vmap). */
bool differentiated(const Tensor& t) {
  if (!t.defined()) return false;
  if (autograd::needs_grad({&t}) || (forward::active() && forward::has_tangent(t))) return true;
  const int lvl = batching::level(t);
  return lvl > 0 && differentiated(batching::physical(t, lvl));
}

/** t's physical tensor at lvl, batch dim first: t broadcast along the batch where it is not
 *  batched there. */
Tensor physical_of(const Tensor& t, int lvl, int64_t batch) {
  if (batching::level(t) == lvl) return batching::physical(t, lvl);
  Dims shape{batch};
  for (int64_t s : t.shape()) shape.push_back(s);
  return t.unsqueeze(0).expand(shape);
}

/** A custom function's inputs batched at `lvl` (vmap): its rules on the physical tensors run as
 *  the user's rules at that level, on the physical tensors wrapped back. The rules may hold
 *  tensors of that level (a closure, a ctx attribute), which this keeps consistent with what
 *  they are given. Defined results come back physical; those of `shared` entries (not batched
 *  at lvl) are summed over the batch, being the sum of every example's contribution. */
struct AtLevel {
  const char* name;
  int lvl;
  int64_t batch;

  Tensors wrap(const Tensors& phys, const std::vector<bool>& batched, const char* what) const {
    Tensors out;
    for (size_t i = 0; i < phys.size(); ++i) {
      if (phys[i].defined() && batching::level(phys[i]) >= lvl)
        fail("[", name, "] its ", what, " ", i, " is batched at vmap level ", batching::level(phys[i]),
             ", not below the level ", lvl,
             " of its inputs: a custom rule cannot be batched again at its own level (run this backward outside "
             "the vmap, or differentiate inside it)");
      out.push_back(batched[i] && phys[i].defined() ? batching::wrap(phys[i], lvl) : phys[i]);
    }
    return out;
  }

  Tensors unwrap(const Tensors& logical, const std::vector<bool>& shared) const {
    Tensors out;
    for (size_t i = 0; i < logical.size(); ++i) {
      if (!logical[i].defined()) {
        out.emplace_back();
        continue;
      }
      Tensor p = physical_of(logical[i], lvl, batch);
      out.push_back(i < shared.size() && shared[i] ? p.sum(Dims{0}) : p);
    }
    return out;
  }
};

}  // namespace

Tensors custom_function(const char* name, const Tensors& inputs, const Tensors& outputs, CustomVjp vjp, CustomJvp jvp,
                        const Tensors& saved) {
  for (const Tensor& o : outputs)
    if (autograd::requires_grad(o))
      fail("[", name, "] its outputs must be computed without recording (under no_grad, from detached inputs)");
  Tensors results;
  results.reserve(outputs.size());
  const int lvl = [&] {
    int l = 0;
    for (const Tensor& t : inputs) l = std::max(l, batching::level(t));
    return l;
  }();
  bool below = false;  // a derivative is asked of the physical tensors (grad or jvp of vmap)
  for (const Tensor& t : inputs) below |= lvl > 0 && differentiated(batching::physical(t, lvl));
  if (below) {
    // Inside vmap, an op links its batched outputs (for derivatives taken inside) and, through
    // its batching rule, its physical ones (for those taken outside): so does a custom function,
    // recursing for lower levels.
    int64_t batch = 0;
    std::vector<bool> in_batched, in_shared, out_batched(outputs.size(), true), saved_batched;
    Tensors phys_in, phys_out, phys_saved;
    for (const Tensor& t : inputs) {
      const bool b = batching::level(t) == lvl;
      if (b) batch = batching::physical(t, lvl).size(0);
      in_batched.push_back(b);
      in_shared.push_back(!b);
      phys_in.push_back(batching::physical(t, lvl));
    }
    for (const Tensor& o : outputs) phys_out.push_back(physical_of(o, lvl, batch));
    for (const Tensor& s : saved) {
      auto same = [&](const Tensor& t) { return s.defined() && &t.impl() == &s.impl(); };
      auto in = std::find_if(inputs.begin(), inputs.end(), same);
      auto out = std::find_if(outputs.begin(), outputs.end(), same);
      if (in != inputs.end()) {
        phys_saved.push_back(phys_in[in - inputs.begin()]);
        saved_batched.push_back(in_batched[in - inputs.begin()]);
      } else if (out != outputs.end()) {
        phys_saved.push_back(phys_out[out - outputs.begin()]);
        saved_batched.push_back(true);
      } else {
        const bool b = s.defined() && batching::level(s) == lvl;
        phys_saved.push_back(b ? batching::physical(s, lvl) : s);
        saved_batched.push_back(b);
      }
    }
    const AtLevel at{name, lvl, batch};
    std::vector<Node::OutputInfo> in_info, out_info;  // per example, for the checks
    for (const Tensor& t : inputs) in_info.push_back({t.shape(), t.dtype(), t.device()});
    for (const Tensor& t : outputs) out_info.push_back({t.shape(), t.dtype(), t.device()});
    CustomVjp phys_vjp = [at, vjp, saved_batched, out_batched, in_shared, in_info](const Tensors& s, const Tensors& g) {
      Tensors grads = vjp(at.wrap(s, saved_batched, "saved tensor"), at.wrap(g, out_batched, "gradient"));
      return at.unwrap(checked(at.name, grads, in_info, "backward", "input"), in_shared);
    };
    CustomJvp phys_jvp;
    if (jvp)
      phys_jvp = [at, jvp, in_batched, out_info](const Tensors& t) {
        Tensors tangents = jvp(at.wrap(t, in_batched, "tangent"));
        return at.unwrap(checked(at.name, tangents, out_info, "forward-mode rule", "output"), {});
      };
    for (const Tensor& r : custom_function(name, phys_in, phys_out, phys_vjp, phys_jvp, phys_saved))
      results.push_back(batching::wrap(r, lvl));
  } else {
    for (const Tensor& o : outputs) results.push_back(o.detach());  // a fresh tensor to link, never the caller's
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
