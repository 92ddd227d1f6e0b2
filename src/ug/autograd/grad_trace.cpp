#include "ug/autograd/grad_trace.h"

#include <algorithm>

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"

namespace ug::autograd {

namespace {

thread_local GradTrace* t_current = nullptr;

bool same(const Tensor& a, const Tensor& b) { return a.impl_ref().get() == b.impl_ref().get(); }

bool contains(const std::vector<Tensor>& list, const Tensor& t) {
  return std::any_of(list.begin(), list.end(), [&](const Tensor& x) { return same(x, t); });
}

}  // namespace

GradTrace::GradTrace() : previous_(t_current) { t_current = this; }
GradTrace::~GradTrace() { t_current = previous_; }
GradTrace* GradTrace::current() { return t_current; }

bool GradTrace::touch(const Tensor& leaf) {
  if (contains(touched_, leaf)) return false;
  touched_.push_back(leaf);
  return true;
}

void GradTrace::cleared(const Tensor& leaf) {
  touch(leaf);
  if (!contains(cleared_, leaf)) cleared_.push_back(leaf);
}

Tensor GradTrace::grad(const Tensor& leaf) {
  // The first time, unless zero_grad cleared it in this trace, the gradient adds into the
  // .grad the leaf has when the program runs: a placeholder stands for it.
  if (touch(leaf) && !contains(cleared_, leaf)) {
    Tensor incoming =
        leaf.grad().defined() ? leaf.grad() : zeros(leaf.shape(), {.dtype = leaf.dtype(), .device = leaf.device()});
    incoming_.emplace_back(incoming, leaf);
    leaf.set_grad(incoming);
  }
  return leaf.grad();
}

void GradTrace::accumulate(const Tensor& leaf, const Tensor& g) {
  NoGradGuard no_grad;
  const Tensor current = grad(leaf);
  leaf.set_grad(current.defined() ? current + g.detach() : g.detach());
}

}  // namespace ug::autograd
