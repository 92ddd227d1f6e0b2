// Tensor's autograd state: whether it requires grad, its grad and grad_fn, detach.
#include "ug/core/batching.h"
#include "ug/graph/record.h"

namespace ug {

bool Tensor::requires_grad() const { return autograd::requires_grad(*this); }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  AutogradMeta& m = autograd::meta(*this);
  if (m.grad_fn && !requires_grad)
    fail<RuntimeError>(
        "[requires_grad_] you can only change requires_grad of leaf tensors; use detach() to get a "
        "tensor that does not require grad");
  if (requires_grad && !is_inexact(dtype()))
    fail<RuntimeError>("[requires_grad_] only tensors of floating point and complex dtype can require gradients, got ",
                       dtype());
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
  if (m && autograd::view_is_stale(*this, *m)) autograd::refresh_view(*this, *m);
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
  if (requires_grad() && !is_inexact(src.dtype()))
    fail<TypeError>("[set_data] a tensor that requires grad needs floating or complex data, got ", src.dtype());
  impl().set_data(src.impl());
}

}  // namespace ug
