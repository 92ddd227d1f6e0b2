// Containers: Sequential (runs its modules in order), ModuleList and ModuleDict (hold
// modules so their parameters are registered, without a forward of their own), ParameterList
// and ParameterDict (hold parameters, registered under torch's names).
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ug/nn/module.h"

namespace ug::nn {

namespace detail {
template <class M> std::shared_ptr<Module> as_module(M&& m) {
  if constexpr (requires { m.ptr(); }) return std::static_pointer_cast<Module>(m.ptr());
  else return std::static_pointer_cast<Module>(std::forward<M>(m));
}
}  // namespace detail

class SequentialImpl : public Module {
  UG_CLONEABLE(SequentialImpl)
 public:
  /** Sequential(Linear(784, 128), ReLU(), Linear(128, 10)): children named "0", "1", ... */
  template <class... M>
  requires(!std::is_base_of_v<Module, std::remove_cvref_t<M>> && ...) explicit SequentialImpl(M&&... modules)
      : Module("Sequential") {
    (push_back(detail::as_module(std::forward<M>(modules))), ...);
  }
  void push_back(std::shared_ptr<Module> m) { push_back(std::to_string(size()), std::move(m)); }
  void push_back(const std::string& name, std::shared_ptr<Module> m);
  std::shared_ptr<Module> operator[](int64_t i) const;
  size_t size() const { return modules_.size(); }
  Tensor forward(const Tensor& x) override;
  /** A new Sequential of the modules at these indices, under their names (torch's seq[1:]). */
  std::shared_ptr<SequentialImpl> slice(const std::vector<int64_t>& indices) const;
  /** Replaces the module at i (negative counts from the end), keeping its name. */
  void set(int64_t i, std::shared_ptr<Module> m);
  /** Removes the modules at these indices; the rest are renamed "0", "1", ... as torch's del. */
  void erase(const std::vector<int64_t>& indices);
  /** Inserts m before index i (-size() <= i <= size()); the modules are renamed "0", "1", ... */
  void insert(int64_t i, std::shared_ptr<Module> m);

 protected:
  void rebind(const CloneMemo& memo) override {
    for (auto& m : modules_) memo.remap(m);
  }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
UG_MODULE(Sequential);

class ModuleListImpl : public Module {
  UG_CLONEABLE(ModuleListImpl)
 public:
  template <class... M>
  requires(!std::is_base_of_v<Module, std::remove_cvref_t<M>> && ...) explicit ModuleListImpl(M&&... modules)
      : Module("ModuleList") {
    (push_back(detail::as_module(std::forward<M>(modules))), ...);
  }
  void push_back(std::shared_ptr<Module> m);
  std::shared_ptr<Module> operator[](int64_t i) const;
  size_t size() const { return modules_.size(); }
  /** A new ModuleList of the modules at these indices (torch's list[1:]). */
  std::shared_ptr<ModuleListImpl> slice(const std::vector<int64_t>& indices) const;
  void set(int64_t i, std::shared_ptr<Module> m);
  /** Removes the modules at these indices; the rest are renumbered. */
  void erase(const std::vector<int64_t>& indices);
  /** Inserts m before index i (-size() <= i <= size()). */
  void insert(int64_t i, std::shared_ptr<Module> m);
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 protected:
  void rebind(const CloneMemo& memo) override {
    for (auto& m : modules_) memo.remap(m);
  }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
UG_MODULE(ModuleList);

class ModuleDictImpl : public Module {
  UG_CLONEABLE(ModuleDictImpl)
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  void insert(const std::string& name, std::shared_ptr<Module> m) { register_module(name, std::move(m)); }
  std::shared_ptr<Module> operator[](const std::string& name) const { return child(name); }
  bool contains(const std::string& name) const { return has_module(name); }
  size_t size() const { return named_children().size(); }
  std::vector<std::string> keys() const;
};
UG_MODULE(ModuleDict);

/** Parameters in a list, registered as "0", "1", ... A tensor that is not a parameter yet
 *  becomes one that requires grad, as torch.nn.Parameter makes it. */
class ParameterListImpl : public Module {
  UG_CLONEABLE(ParameterListImpl)
 public:
  explicit ParameterListImpl(const std::vector<Tensor>& values = {});
  Tensor& push_back(Tensor t);
  Tensor& operator[](int64_t i);
  /** Replaces parameter i (negative counts from the end). */
  void set(int64_t i, Tensor t);
  size_t size() const { return parameters(false).size(); }
  /** torch's lines: "  (0): Parameter containing: [float32 of size 2x3]". */
  std::string extra_repr() const override;

 private:
  /** Parameter i's name, "0", "1", ..., for i in [-size, size). */
  std::string name_of(int64_t i) const;
};
UG_MODULE(ParameterList);

/** Parameters by key, registered under their keys (no dots), in insertion order. */
class ParameterDictImpl : public Module {
  UG_CLONEABLE(ParameterDictImpl)
 public:
  ParameterDictImpl() : Module("ParameterDict") {}
  Tensor& insert(const std::string& key, Tensor t);
  Tensor& operator[](const std::string& key);
  bool contains(const std::string& key) const { return has_parameter(key); }
  void erase(const std::string& key);
  size_t size() const { return parameters(false).size(); }
  std::vector<std::string> keys() const;
  /** torch's lines: "  (key): Parameter containing: [FloatTensor of size 2x3]". */
  std::string extra_repr() const override;
};
UG_MODULE(ParameterDict);

}  // namespace ug::nn
