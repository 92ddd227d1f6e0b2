// torch.nn.utils.parametrize: a module's parameter or buffer computed, each time it is read, by
// a chain of modules from other tensors (its "originals"), as torch's.
//
// register_parametrization moves module.weight to module.parametrizations.weight.original (a
// ParametrizationList in the ModuleDict `parametrizations`) and leaves the slot "weight"
// registered but empty, so it is in no parameter list or state dict, as in torch. A forward
// pre-hook fills the slot with the computed value and a forward hook empties it again, so a
// layer that reads its weight by name (parameter("weight")) sees the computed one and its
// gradient reaches the originals. value() computes it outside a forward (Python's module.weight).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ug/nn/containers.h"

namespace ug::nn::parametrize {

/** What a right_inverse gives: one tensor (is_tensor) or a sequence of them. */
struct Originals {
  std::vector<Tensor> tensors;
  bool is_tensor = true;
};

/** A parametrization written in C++. forward maps the original to the tensor; the first of a
 *  list whose right_inverse gave several originals gets them all through forward_originals. */
class ParametrizationImpl : public Module {
 public:
  using Module::Module;
  virtual Tensor forward_originals(const std::vector<Tensor>& originals);
  /** The originals for a value; nullopt where the parametrization has no right inverse. */
  virtual std::optional<Originals> right_inverse(const Tensor& value);
};

/** How a list reaches a parametrization that is no ParametrizationImpl (one written in
 *  Python): set by the front end. right_inverse gives nullopt where the module has none; at
 *  registration, a right_inverse that says it is not implemented counts as none (torch's). */
struct ForeignParametrization {
  std::function<Tensor(Module&, const std::vector<Tensor>&)> forward;
  std::function<std::optional<Originals>(Module&, const Tensor&, bool at_registration)> right_inverse;
};
void set_foreign_parametrization(ForeignParametrization calls);

/** module.parametrizations[name]: the chain and the originals ("original", or "original0",
 *  "original1", ... when the first right_inverse gave several). */
class ParametrizationListImpl : public ModuleListImpl {
  UG_CLONEABLE(ParametrizationListImpl)
 public:
  /** Sets the originals from `original` through the right inverses (last module first);
   *  unless unsafe, checks that the chain gives back original's dtype and shape. */
  ParametrizationListImpl(const std::vector<std::shared_ptr<Module>>& modules, const Tensor& original,
                          bool original_is_parameter, bool unsafe);
  /** The parametrized tensor (torch's ParametrizationList.forward()). */
  Tensor value();
  /** Sets the originals so that value() gives `value` (every module needs a right_inverse). */
  void right_inverse(const Tensor& value);
  std::vector<Tensor> originals();
  bool is_tensor() const { return is_tensor_; }
  int64_t ntensors() const { return ntensors_; }
  bool unsafe() const { return unsafe_; }
  void set_unsafe(bool unsafe) { unsafe_ = unsafe; }

 private:
  Tensor& original(int64_t i);
  bool unsafe_;
  bool is_tensor_ = true;
  int64_t ntensors_ = 1;
};
UG_MODULE(ParametrizationList);

/** module.parametrizations: a ModuleDict that also keeps the hooks that fill the slots. */
class ParametrizationsImpl : public ModuleDictImpl {
  UG_CLONEABLE(ParametrizationsImpl)
 public:
  ParametrizationsImpl(size_t pre_hook, size_t hook, std::string host_type_name)
      : pre_hook_(pre_hook), hook_(hook), host_type_name_(std::move(host_type_name)) {}
  size_t pre_hook() const { return pre_hook_; }
  size_t hook() const { return hook_; }
  /** The host's type name before it became "Parametrized<name>". */
  const std::string& host_type_name() const { return host_type_name_; }

 private:
  size_t pre_hook_, hook_;
  std::string host_type_name_;
};

/** Parametrizes module's parameter or buffer `name` (or appends to its chain). unsafe: the
 *  parametrization may change its dtype and shape (no checks). Returns module. */
Module& register_parametrization(Module& module, const std::string& name, std::shared_ptr<Module> parametrization,
                                 bool unsafe = false);
/** Whether `name` (any tensor, when absent) of module is parametrized. */
bool is_parametrized(const Module& module, const std::optional<std::string>& name = std::nullopt);
/** Makes `name` a plain parameter or buffer again: its current value (leave_parametrized) or
 *  its original (only for a single original). */
Module& remove_parametrizations(Module& module, const std::string& name, bool leave_parametrized = true);
/** torch's transfer_parametrizations_and_params: registers from_module's parametrizations of
 *  `name` (all, when absent) on to_module, which then shares from_module's originals; a tensor
 *  to_module lacks is made a parameter first. Returns to_module. */
Module& transfer_parametrizations_and_params(Module& from_module, Module& to_module,
                                             const std::optional<std::string>& name = std::nullopt);
/** The parametrized tensor: the one in its slot during a forward, else computed (or cached). */
Tensor value(Module& module, const std::string& name);
/** module.name = value: the originals through the right inverses. */
void assign(Module& module, const std::string& name, const Tensor& value);

/** torch's `with parametrize.cached():` each parametrized tensor is computed once while one
 *  is alive (per thread); nestable. */
class Cached {
 public:
  Cached();
  ~Cached();
  Cached(const Cached&) = delete;
  Cached& operator=(const Cached&) = delete;
};

}  // namespace ug::nn::parametrize
