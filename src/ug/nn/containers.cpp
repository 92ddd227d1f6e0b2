#include "ug/nn/containers.h"

namespace ug::nn {

namespace {
std::shared_ptr<Module> at(const std::vector<std::shared_ptr<Module>>& modules, int64_t i, const char* type) {
  const int64_t n = static_cast<int64_t>(modules.size());
  if (i < -n || i >= n) fail<IndexError>("[", type, "] index ", i, " is out of range for ", n, " modules");
  return modules[static_cast<size_t>(i < 0 ? i + n : i)];
}
}  // namespace

void SequentialImpl::push_back(const std::string& name, std::shared_ptr<Module> m) {
  if (!m) fail("[Sequential] cannot add an empty module");
  register_module(name, m);
  modules_.push_back(std::move(m));
}

std::shared_ptr<Module> SequentialImpl::operator[](int64_t i) const { return at(modules_, i, "Sequential"); }

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : modules_) y = (*m)(y);
  return y;
}

void ModuleListImpl::push_back(std::shared_ptr<Module> m) {
  if (!m) fail("[ModuleList] cannot add an empty module");
  register_module(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

std::shared_ptr<Module> ModuleListImpl::operator[](int64_t i) const { return at(modules_, i, "ModuleList"); }

std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> out;
  for (auto& [name, m] : named_children()) out.push_back(name);
  return out;
}

}  // namespace ug::nn
