// Deep copies of modules and tensors that keep what was shared shared: Module::clone in C++,
// copy.deepcopy in Python (which passes its own memo along in `context`).
#pragma once

#include <any>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "ug/core/tensor.h"

namespace ug::nn {

class Module;

/** What one deep copy has copied so far. Two tensors over one storage stay two views of one
 *  new storage, a parameter tied into two layers stays one parameter, and a module reached
 *  twice is copied once, as torch's deepcopy memo does. */
class CloneMemo {
 public:
  /** A copy of a leaf tensor: its storage copied once, the same view over it, its requires_grad,
   *  parameter mark and (not for a parameter, as in torch) grad. Tensors that autograd made
   *  (non-leaves) are refused, as torch refuses them. */
  Tensor tensor(const Tensor& t);
  /** The module's copy (Module::clone_into), made once. */
  std::shared_ptr<Module> module(const Module& m);
  /** Points a member holder (`Linear out_proj`) or pointer at the copy of what it held. */
  template <class Holder> void remap(Holder& h) const {
    if (!h) return;
    auto it = modules_.find(as_module_ptr(h));
    if (it == modules_.end()) return;
    using Impl = std::remove_reference_t<decltype(*h)>;
    auto replacement = std::dynamic_pointer_cast<Impl>(it->second);
    if (!replacement) refuse_substitute(*as_module_ptr(h), *it->second);
    h = Holder(std::move(replacement));
  }
  /** Makes `with` stand for `old`: a child replaced in place (Module::register_module), so that
   *  the members holding it (a Sequential's list, a layer's Linear) hold `with`. */
  void substitute(const Module& old, std::shared_ptr<Module> with) { modules_[&old] = std::move(with); }
  /** The front end's own state for this copy (Python's deepcopy memo). */
  std::any context;

 private:
  /** A replacement of another type than the member holding the old module can hold. */
  [[noreturn]] static void refuse_substitute(const Module& old, const Module& with);
  template <class Holder> static const Module* as_module_ptr(const Holder& h) {
    if constexpr (requires { h.ptr(); }) return h.ptr().get();
    else return h.get();
  }
  // Original tensors are kept with their copies, so that no key is reused by a new tensor
  // mid-copy; modules are held by the tree being copied.
  std::unordered_map<const TensorImpl*, std::pair<Tensor, Tensor>> tensors_;
  std::map<std::pair<const Storage*, DType>, std::pair<Tensor, Tensor>> storages_;
  std::unordered_map<const Module*, std::shared_ptr<Module>> modules_;
};

}  // namespace ug::nn
