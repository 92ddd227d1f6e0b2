// Tensor's members that run backward or hook into it (their state: graph/tensor_state.cpp).
#include "ug/autograd/engine.h"
#include "ug/graph/record.h"
#include "ug/ops/binary.h"
#include "ug/ops/inplace_history.h"

namespace ug {

void Tensor::retain_grad() const {
  AutogradMeta& m = autograd::meta(*this);
  if (!m.grad_fn) {
    if (!m.requires_grad) fail<RuntimeError>("[retain_grad] can't retain_grad on a tensor that does not require grad");
    return;  // leaves keep their grad anyway
  }
  if (!m.retains_grad) ops::retain_grad_at(m);
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = autograd::meta_if(*this);
  return m && m->retains_grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{}, retain_graph,
                     create_graph, inputs);
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

namespace autograd {

size_t register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> fn) {
  AutogradMeta& m = meta(leaf);
  if (m.grad_fn || !m.requires_grad)
    fail<RuntimeError>("[register_post_accumulate_grad_hook] needs a leaf tensor that requires grad");
  m.post_accumulate_hooks.push_back(std::move(fn));
  return m.post_accumulate_hooks.size() - 1;
}

void remove_post_accumulate_grad_hook(const Tensor& leaf, size_t id) {
  AutogradMeta& m = meta(leaf);
  if (id < m.post_accumulate_hooks.size()) m.post_accumulate_hooks[id] = [](const Tensor&) {};
}

}  // namespace autograd
}  // namespace ug
