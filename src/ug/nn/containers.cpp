#include "ug/nn/containers.h"

#include <string_view>

namespace ug::nn {

namespace {
using Items = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

/** i (negative counts from the end) as a position in n modules; `end_ok` admits n (insert's). */
size_t position(int64_t i, size_t size, const char* type, bool end_ok = false) {
  const auto n = static_cast<int64_t>(size);
  if (i < -n || i > n || (i == n && !end_ok))
    fail<IndexError>("[", type, "] index ", i, " is out of range for ", n, " modules");
  return static_cast<size_t>(i < 0 ? i + n : i);
}

std::shared_ptr<Module> at(const std::vector<std::shared_ptr<Module>>& modules, int64_t i, const char* type) {
  return modules[position(i, modules.size(), type)];
}

/** Makes `items` m's children, in order, and `modules` their list. */
void assign(Module& m, std::vector<std::shared_ptr<Module>>& modules, const Items& items) {
  for (const auto& [name, child] : m.named_children()) m.unregister(name);
  modules.clear();
  for (const auto& [name, child] : items) {
    m.register_module(name, child);
    modules.push_back(child);
  }
}

/** The modules named "0", "1", ... */
Items numbered(const std::vector<std::shared_ptr<Module>>& modules) {
  Items out;
  for (const auto& m : modules) out.emplace_back(std::to_string(out.size()), m);
  return out;
}

/** The modules without those at `indices`. */
std::vector<std::shared_ptr<Module>> without(const std::vector<std::shared_ptr<Module>>& modules,
                                             const std::vector<int64_t>& indices, const char* type) {
  std::vector<bool> drop(modules.size());
  for (int64_t i : indices) drop[position(i, modules.size(), type)] = true;
  std::vector<std::shared_ptr<Module>> out;
  for (size_t i = 0; i < modules.size(); ++i)
    if (!drop[i]) out.push_back(modules[i]);
  return out;
}

/** modules with m inserted before position i (torch's insert: i may be len, or negative). */
std::vector<std::shared_ptr<Module>> with_inserted(std::vector<std::shared_ptr<Module>> modules, int64_t i,
                                                   std::shared_ptr<Module> m, const char* type) {
  if (!m) fail("[", type, "] cannot add an empty module");
  modules.insert(modules.begin() + static_cast<int64_t>(position(i, modules.size(), type, true)), std::move(m));
  return modules;
}

/** Registers t as a parameter: one already keeps its requires_grad, another tensor becomes
 *  a trainable parameter (torch wraps it in nn.Parameter). */
Tensor& register_as_parameter(Module& m, const std::string& name, Tensor t, const char* type) {
  if (!t.defined()) fail("[", type, "] cannot hold an undefined tensor");
  const bool requires_grad = t.impl().is_parameter() ? t.requires_grad() : true;
  return m.register_parameter(name, std::move(t), requires_grad);
}

/** "size 2x3" as torch prints a parameter's shape in a ParameterList or ParameterDict. */
std::string size_of(const Tensor& t) {
  std::string out;
  for (int64_t d : t.shape()) {
    if (!out.empty()) out += 'x';
    out += std::to_string(d);
  }
  return out;
}

/** torch's lines, one per parameter: "  (name): Parameter containing: [<type> of size 2x3]". */
std::string parameter_lines(const Module& m, const std::function<std::string(const Tensor&)>& type) {
  std::string out;
  for (const auto& [name, t] : m.named_parameters(false))
    out += std::string(out.empty() ? "" : "\n") + "  (" + name + "): Parameter containing: [" + type(t) + " of size " +
           size_of(t) + "]";
  return out;
}

/** torch.typename of a floating tensor ("FloatTensor"), what torch's ParameterDict prints. */
std::string legacy_type_name(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Float64: return "DoubleTensor";
    case DType::Float16: return "HalfTensor";
    case DType::BFloat16: return "BFloat16Tensor";
    default: return "FloatTensor";
  }
}
}  // namespace

void SequentialImpl::push_back(const std::string& name, std::shared_ptr<Module> m) {
  if (!m) fail("[Sequential] cannot add an empty module");
  register_module(name, m);
  modules_.push_back(std::move(m));
}

std::shared_ptr<Module> SequentialImpl::operator[](int64_t i) const { return at(modules_, i, "Sequential"); }

std::shared_ptr<SequentialImpl> SequentialImpl::slice(const std::vector<int64_t>& indices) const {
  const Items items = named_children();
  auto out = std::make_shared<SequentialImpl>();
  for (int64_t i : indices) {
    const auto& [name, m] = items[position(i, items.size(), "Sequential")];
    out->push_back(name, m);
  }
  return out;
}

void SequentialImpl::set(int64_t i, std::shared_ptr<Module> m) {
  if (!m) fail("[Sequential] cannot hold an empty module");
  Items items = named_children();
  items[position(i, items.size(), "Sequential")].second = std::move(m);
  assign(*this, modules_, items);
}

void SequentialImpl::erase(const std::vector<int64_t>& indices) {
  assign(*this, modules_, numbered(without(modules_, indices, "Sequential")));
}

void SequentialImpl::insert(int64_t i, std::shared_ptr<Module> m) {
  assign(*this, modules_, numbered(with_inserted(modules_, i, std::move(m), "Sequential")));
}

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

std::shared_ptr<ModuleListImpl> ModuleListImpl::slice(const std::vector<int64_t>& indices) const {
  auto out = std::make_shared<ModuleListImpl>();
  for (int64_t i : indices) out->push_back(at(modules_, i, "ModuleList"));
  return out;
}

void ModuleListImpl::set(int64_t i, std::shared_ptr<Module> m) {
  if (!m) fail("[ModuleList] cannot hold an empty module");
  std::vector<std::shared_ptr<Module>> modules = modules_;
  modules[position(i, modules.size(), "ModuleList")] = std::move(m);
  assign(*this, modules_, numbered(modules));
}

void ModuleListImpl::erase(const std::vector<int64_t>& indices) {
  assign(*this, modules_, numbered(without(modules_, indices, "ModuleList")));
}

void ModuleListImpl::insert(int64_t i, std::shared_ptr<Module> m) {
  assign(*this, modules_, numbered(with_inserted(modules_, i, std::move(m), "ModuleList")));
}

std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> out;
  for (auto& [name, m] : named_children()) out.push_back(name);
  return out;
}

ParameterListImpl::ParameterListImpl(const std::vector<Tensor>& values) : Module("ParameterList") {
  for (const Tensor& t : values) push_back(t);
}

Tensor& ParameterListImpl::push_back(Tensor t) {
  return register_as_parameter(*this, std::to_string(size()), std::move(t), "ParameterList");
}

std::string ParameterListImpl::name_of(int64_t i) const {
  const int64_t n = static_cast<int64_t>(size());
  if (i < -n || i >= n) fail<IndexError>("[ParameterList] index ", i, " is out of range for ", n, " parameters");
  return std::to_string(i < 0 ? i + n : i);
}

Tensor& ParameterListImpl::operator[](int64_t i) { return parameter(name_of(i)); }

void ParameterListImpl::set(int64_t i, Tensor t) {
  register_as_parameter(*this, name_of(i), std::move(t), "ParameterList");
}

std::string ParameterListImpl::extra_repr() const {
  return parameter_lines(*this, [](const Tensor& t) { return std::string(dtype_name(t.dtype())); });
}

Tensor& ParameterDictImpl::insert(const std::string& key, Tensor t) {
  return register_as_parameter(*this, key, std::move(t), "ParameterDict");
}

Tensor& ParameterDictImpl::operator[](const std::string& key) {
  if (!contains(key)) fail<IndexError>("[ParameterDict] no parameter \"", key, "\"");
  return parameter(key);
}

void ParameterDictImpl::erase(const std::string& key) {
  (*this)[key];
  unregister(key);
}

std::vector<std::string> ParameterDictImpl::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : named_parameters(false)) out.push_back(name);
  return out;
}

std::string ParameterDictImpl::extra_repr() const { return parameter_lines(*this, legacy_type_name); }

}  // namespace ug::nn
