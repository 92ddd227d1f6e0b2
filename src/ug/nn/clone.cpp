#include "ug/nn/clone.h"

#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"
#include "ug/nn/module.h"

namespace ug::nn {

Tensor CloneMemo::tensor(const Tensor& t) {
  if (!t.defined()) return t;
  if (auto it = tensors_.find(&t.impl()); it != tensors_.end()) return it->second.second;
  if (!t.is_leaf())
    fail<RuntimeError>(
        "[deepcopy] only tensors created by the user (graph leaves) can be deep-copied, as in torch; "
        "this ",
        t.dtype(), " tensor of shape ", t.shape(), " was made by ", t.grad_fn()->name(), ": copy t.detach() instead");
  NoGradGuard no_grad;
  // The whole storage is copied once, so views of it stay views of one storage in the copy.
  auto& [original_base, base] = storages_[{t.storage().get(), t.dtype()}];
  if (!base.defined()) {
    original_base = t.detach().as_strided({static_cast<int64_t>(t.storage()->nbytes() / t.element_size())}, {1}, 0);
    base = original_base.clone();
  }
  Dims shape(t.shape().begin(), t.shape().end()), strides(t.strides().begin(), t.strides().end());
  Tensor copy = base.as_strided(shape, strides, t.storage_offset()).detach();
  copy.impl().set_is_parameter(t.impl().is_parameter());
  if (t.requires_grad()) copy.requires_grad_(true);
  // torch's Parameter.__deepcopy__ leaves the gradient behind; a plain tensor's goes along.
  if (Tensor g = t.grad(); g.defined() && !t.impl().is_parameter()) copy.set_grad(tensor(g));
  tensors_.emplace(&t.impl(), std::pair{t, copy});
  return copy;
}

std::shared_ptr<Module> CloneMemo::module(const Module& m) {
  if (auto it = modules_.find(&m); it != modules_.end()) return it->second;
  std::shared_ptr<Module> copy = m.clone_into(*this);
  modules_.emplace(&m, copy);
  return copy;
}

void CloneMemo::refuse_substitute(const Module& old, const Module& with) {
  fail<TypeError>("[register_module] a ", with.type_name(), " cannot take the place of a ", old.type_name(),
                  ": the module holding it calls it as one");
}

}  // namespace ug::nn
