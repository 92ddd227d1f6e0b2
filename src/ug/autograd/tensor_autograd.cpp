// Tensor's autograd members and the recording helper ops use.
#include <algorithm>

#include "ug/autograd/debugging.h"
#include "ug/autograd/engine.h"
#include "ug/autograd/forward.h"
#include "ug/backend/backend.h"
#include "ug/core/batching.h"
#include "ug/autograd/record.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"

namespace ug {

namespace autograd {

void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<const Tensor*>& outputs,
            FunctionNode::Rule rule) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
  auto node = make_ref<FunctionNode>(name, std::move(edges), std::move(rule));
  if (AnomalyMode::is_enabled()) node->forward_trace() = debugging::current_trace();
  uint32_t nr = 0;
  for (const Tensor* out : outputs) {
    node->outputs().push_back({out->shape(), out->dtype(), out->device()});
    if (is_floating(out->dtype())) {
      AutogradMeta& m = meta(*out);
      m.grad_fn = node;
      m.output_nr = nr;
    }
    ++nr;
  }
}

void record(const char* name, std::initializer_list<Tensor> inputs, std::initializer_list<const Tensor*> outputs,
            FunctionNode::Rule rule) {
  record(name, std::vector<Tensor>(inputs), std::vector<const Tensor*>(outputs), std::move(rule));
}

bool inplace_needs_rebase(const Tensor& t, const Tensor* other, const char* op) {
  // Tangents (forward mode) must follow an in-place change whatever the grad mode.
  if (forward::has_tangent(t) || (other && forward::has_tangent(*other))) {
    if (t.impl().is_view())
      fail<RuntimeError>("[", op, "] in-place change of a view of a tensor with a forward-mode tangent is not "
                         "supported; use out-of-place ops");
    return true;
  }
  if (!GradMode::is_enabled()) return false;
  AutogradMeta* m = meta_if(t);
  const bool t_grad = m && (m->requires_grad || m->grad_fn);
  if (t_grad && !m->grad_fn)
    fail<RuntimeError>("[", op, "] a leaf tensor that requires grad is being used in an in-place operation; "
                       "wrap it in no_grad() or use the out-of-place form");
  const bool needed = t_grad || (other && other->defined() && requires_grad(*other));
  if (needed && t.impl().is_view())
    fail<RuntimeError>("[", op, "] in-place change of a view while recording gradients is not supported: the "
                       "base tensor's history would miss it; use out-of-place ops (cat, where, index ops)");
  return needed;
}

void rebase_history(const Tensor& t, const Tensor& result) {
  {
    NoGradGuard no_grad;
    backend_for(t.device()).copy(result, t);
  }
  t.bump_version();
  AutogradMeta* rm = meta_if(result);
  AutogradMeta& m = meta(t);
  m.grad_fn = rm ? rm->grad_fn : Ref<Node>();
  m.output_nr = rm ? rm->output_nr : 0;
  forward::copy_tangents(result, t);
}

namespace {
const graph::OpDef kEmbed("embed");
}

Tensor embed(const Tensor& g, const Shape& shape, const std::function<Tensor(const Tensor&)>& view) {
  graph::OpCall call(kEmbed);
  Tensor out = zeros(Dims(shape.begin(), shape.end()), {.dtype = g.dtype(), .device = g.device()});
  {
    NoGradGuard no_grad;
    backend_for(out.device()).copy(g, view(out));
  }
  call.finish({&g}, {&out}, {},
              [view](const graph::Tensors&, graph::Tensors&& gg) { return graph::Tensors{view(gg[0])}; },
              [&](const graph::Tensors& t) { return graph::Tensors{embed(t[0], shape, view)}; });
  return out;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  Dims dims;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.size(d) != 1)) dims.push_back(d);
  Tensor s = dims.empty() ? g : g.sum(dims, true);
  return lead > 0 || !(s.shape() == shape) ? s.reshape(shape) : s;
}

}  // namespace autograd

bool Tensor::requires_grad() const { return autograd::requires_grad(*this); }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  AutogradMeta& m = autograd::meta(*this);
  if (m.grad_fn && !requires_grad)
    fail<RuntimeError>("[requires_grad_] you can only change requires_grad of leaf tensors; use detach() to get a "
                       "tensor that does not require grad");
  if (requires_grad && !is_floating(dtype()))
    fail<RuntimeError>("[requires_grad_] only tensors of floating point dtype can require gradients, got ", dtype());
  m.requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  AutogradMeta* m = autograd::meta_if(*this);
  if (!m) return Tensor();
  return m->retained_grad ? *m->retained_grad : m->grad;
}

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined() && !(grad.shape() == shape()))
    fail("[grad] assigned grad has shape ", grad.shape(), " but the tensor has shape ", shape());
  AutogradMeta& m = autograd::meta(*this);
  (m.retained_grad ? *m.retained_grad : m.grad) = grad;
}

Ref<Node> Tensor::grad_fn() const {
  AutogradMeta* m = autograd::meta_if(*this);
  return m ? m->grad_fn : Ref<Node>();
}

bool Tensor::is_leaf() const { return !grad_fn(); }

Tensor Tensor::detach() const {
  Tensor d = batching::shallow_copy(*this);
  if (const BatchInfo* b = d.impl().batch()) {
    // The physical tensor may carry history (grad of vmap): the batch view must not.
    return batching::wrap(Tensor(b->physical).detach(), b->level);
  }
  return d;
}

void Tensor::set_data(const Tensor& src) const {
  if (!is_leaf()) fail<RuntimeError>("[set_data] only leaf tensors can take new data; this one was made by an op");
  if (impl().batch() || src.impl().batch()) throw_no_batching_rule();
  if (requires_grad() && !is_floating(src.dtype()))
    fail<TypeError>("[set_data] a tensor that requires grad needs floating data, got ", src.dtype());
  impl().set_data(src.impl());
}

void Tensor::retain_grad() const {
  AutogradMeta& m = autograd::meta(*this);
  if (!m.grad_fn) {
    if (!m.requires_grad) fail<RuntimeError>("[retain_grad] can't retain_grad on a tensor that does not require grad");
    return;  // leaves keep their grad anyway
  }
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.retained_grad = std::make_shared<Tensor>();
  m.grad_fn->output_hooks().push_back({m.output_nr, [cell = m.retained_grad](const Tensor& g) {
                                         *cell = cell->defined() ? *cell + g.detach() : g.detach().clone();
                                         return Tensor();
                                       }});
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = autograd::meta_if(*this);
  return m && m->retains_grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph);
}

size_t Tensor::register_hook(std::function<Tensor(const Tensor&)> fn) const {
  AutogradMeta& m = autograd::meta(*this);
  if (!m.grad_fn && !m.requires_grad)
    fail<RuntimeError>("[register_hook] cannot register a hook on a tensor that doesn't require gradient");
  if (m.grad_fn) {
    m.grad_fn->output_hooks().push_back({m.output_nr, std::move(fn)});
    return m.grad_fn->output_hooks().size() - 1;
  }
  m.leaf_hooks.push_back(std::move(fn));
  return m.leaf_hooks.size() - 1;
}

void Tensor::remove_hook(size_t id) const {
  AutogradMeta& m = autograd::meta(*this);
  auto disable = [](GradHook& h) { h = [](const Tensor&) { return Tensor(); }; };
  if (m.grad_fn) {
    if (id < m.grad_fn->output_hooks().size()) disable(m.grad_fn->output_hooks()[id].second);
  } else if (id < m.leaf_hooks.size()) {
    disable(m.leaf_hooks[id]);
  }
}

}  // namespace ug
