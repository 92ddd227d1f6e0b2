#include "ug/nn/parametrize.h"

#include <map>
#include <sstream>
#include <utility>

#include "ug/graph/grad_mode.h"

namespace ug::nn::parametrize {

namespace {

ForeignParametrization& foreign() {
  static ForeignParametrization calls;
  return calls;
}

thread_local int cache_depth = 0;
thread_local std::map<std::pair<const Module*, std::string>, Tensor> cache;

/** Calls one parametrization on its input(s), with its hooks. */
Tensor run(Module& m, const std::vector<Tensor>& inputs) {
  if (auto* p = dynamic_cast<ParametrizationImpl*>(&m)) {
    if (inputs.size() == 1) return (*p)(inputs[0]);
    return p->call(inputs, [p](const std::vector<Tensor>& in) { return std::vector<Tensor>{p->forward_originals(in)}; })
        .at(0);
  }
  if (foreign().forward) return foreign().forward(m, inputs);
  if (inputs.size() != 1)
    fail("[parametrize] ", m.type_name(), " takes one tensor; it cannot take the ", inputs.size(), " originals");
  return m(inputs[0]);
}

std::optional<Originals> inverse(Module& m, const Tensor& value, bool at_registration) {
  if (auto* p = dynamic_cast<ParametrizationImpl*>(&m)) return p->right_inverse(value);
  if (foreign().right_inverse) return foreign().right_inverse(m, value, at_registration);
  return std::nullopt;
}

std::string shape_text(const Tensor& t) {
  std::ostringstream s;
  s << t.shape();
  return s.str();
}

/** The registered slot (parameter or buffer) `name` of module. */
Tensor& slot(Module& module, const std::string& name) {
  return module.has_parameter(name) ? module.parameter(name) : module.buffer(name);
}

ParametrizationsImpl* parametrizations(const Module& module) {
  if (!module.has_module("parametrizations")) return nullptr;
  return dynamic_cast<ParametrizationsImpl*>(module.child("parametrizations").get());
}

ParametrizationListImpl& list(const Module& module, const std::string& name) {
  ParametrizationsImpl* dict = parametrizations(module);
  if (!dict || !dict->contains(name))
    fail("[parametrize] ", module.type_name(), " has no parametrization on \"", name, "\"");
  auto* l = dynamic_cast<ParametrizationListImpl*>((*dict)[name].get());
  if (!l) fail("[parametrize] parametrizations.", name, " of ", module.type_name(), " is not a ParametrizationList");
  return *l;
}

/** The value from the originals, or the cached one inside a Cached scope. */
Tensor compute(Module& module, const std::string& name) {
  ParametrizationListImpl& chain = list(module, name);
  if (cache_depth == 0) return chain.value();
  const auto key = std::make_pair(static_cast<const Module*>(&module), name);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Tensor v = chain.value();
  cache.emplace(key, v);
  return v;
}

/** The hooks' work: every parametrized slot filled before the forward (afresh: a forward that
 *  threw left its values there), emptied after. */
void fill_slots(Module& module) {
  if (ParametrizationsImpl* dict = parametrizations(module))
    for (const std::string& name : dict->keys()) {
      Tensor v = compute(module, name);
      slot(module, name) = v;
    }
}

void empty_slots(Module& module) {
  if (ParametrizationsImpl* dict = parametrizations(module))
    for (const std::string& name : dict->keys()) slot(module, name) = Tensor();
}

}  // namespace

void set_foreign_parametrization(ForeignParametrization calls) { foreign() = std::move(calls); }

Tensor ParametrizationImpl::forward_originals(const std::vector<Tensor>& originals) {
  if (originals.size() != 1)
    fail("[parametrize] ", type_name(), " takes one tensor; it cannot take the ", originals.size(), " originals");
  return forward(originals[0]);
}

std::optional<Originals> ParametrizationImpl::right_inverse(const Tensor&) { return std::nullopt; }

// ---- ParametrizationList ------------------------------------------------------------------

ParametrizationListImpl::ParametrizationListImpl(const std::vector<std::shared_ptr<Module>>& modules,
                                                 const Tensor& original, bool original_is_parameter, bool unsafe)
    : unsafe_(unsafe) {
  set_type_name("ParametrizationList");
  if (modules.empty()) fail("[ParametrizationList] requires one or more modules");
  for (const auto& m : modules) push_back(m);
  Originals next{{original}, true};
  {
    NoGradGuard no_grad;
    for (size_t i = modules.size(); i-- > 0;) {
      if (!next.is_tensor)
        fail("[register_parametrization] only the first parametrization's right_inverse may return several tensors");
      if (std::optional<Originals> r = inverse(*modules[i], next.tensors[0], true)) next = std::move(*r);
    }
  }
  is_tensor_ = next.is_tensor;
  ntensors_ = static_cast<int64_t>(next.tensors.size());
  if (is_tensor_) {
    const Tensor& t = next.tensors.at(0);
    if (t.dtype() != original.dtype())
      fail("[register_parametrization] when right_inverse returns one tensor it may not change the dtype: original ",
           original.dtype(), ", right_inverse(original) ", t.dtype());
    if (t.device() != original.device())
      fail("[register_parametrization] when right_inverse returns one tensor it may not change the device");
    if (t.impl_ref() != original.impl_ref()) {
      NoGradGuard no_grad;
      original.set_data(t);
    }
    if (original_is_parameter) register_parameter("original", original, original.requires_grad());
    else register_buffer("original", original);
  } else {
    for (int64_t i = 0; i < ntensors_; ++i) {
      const std::string name = "original" + std::to_string(i);
      // A new tensor sharing the returned one's data (torch's Parameter(originali)).
      Tensor t = next.tensors[i].detach();
      if (original_is_parameter) {
        register_parameter(name, t, original.requires_grad());
      } else {
        t.requires_grad_(original.requires_grad());
        register_buffer(name, t);
      }
    }
  }
  if (!unsafe_) {
    Tensor z = value();
    if (z.dtype() != original.dtype())
      fail("[register_parametrization] a parametrization may not change the dtype of the tensor unless unsafe=True: ",
           "unparametrized ", original.dtype(), ", parametrized ", z.dtype());
    if (!(z.shape() == original.shape()))
      fail("[register_parametrization] a parametrization may not change the shape of the tensor unless unsafe=True: ",
           "unparametrized ", shape_text(original), ", parametrized ", shape_text(z));
  }
}

Tensor& ParametrizationListImpl::original(int64_t i) {
  const std::string name = is_tensor_ ? "original" : "original" + std::to_string(i);
  return has_parameter(name) ? parameter(name) : buffer(name);
}

std::vector<Tensor> ParametrizationListImpl::originals() {
  std::vector<Tensor> out;
  for (int64_t i = 0; i < ntensors_; ++i) out.push_back(original(i));
  return out;
}

Tensor ParametrizationListImpl::value() {
  Tensor x = run(*(*this)[0], originals());
  for (size_t i = 1; i < size(); ++i) x = run(*(*this)[static_cast<int64_t>(i)], {x});
  return x;
}

void ParametrizationListImpl::right_inverse(const Tensor& value) {
  NoGradGuard no_grad;
  Originals next{{value}, true};
  for (size_t i = size(); i-- > 0;) {
    Module& m = *(*this)[static_cast<int64_t>(i)];
    if (!next.is_tensor)
      fail("[parametrize] only the first parametrization's right_inverse may return several tensors");
    std::optional<Originals> r = inverse(m, next.tensors[0], false);
    if (!r) fail("[parametrize] parametrization ", m.type_name(), " does not implement right_inverse");
    next = std::move(*r);
  }
  if (next.is_tensor != is_tensor_ || static_cast<int64_t>(next.tensors.size()) != ntensors_)
    fail("[parametrize] right_inverse must return ",
         is_tensor_ ? "a tensor" : "a sequence of " + std::to_string(ntensors_) + " tensors", ", got ",
         next.is_tensor ? "a tensor" : "a sequence of " + std::to_string(next.tensors.size()) + " tensors");
  for (int64_t i = 0; i < ntensors_; ++i) {
    Tensor& o = original(i);
    const Tensor& t = next.tensors[i];
    if (t.dtype() != o.dtype())
      fail("[parametrize] the tensor ", i, " returned by right_inverse has dtype ", t.dtype(), " while original",
           is_tensor_ ? "" : std::to_string(i), " has dtype ", o.dtype());
    if (t.impl_ref() != o.impl_ref()) o.set_data(t);
  }
}

// ---- the module functions --------------------------------------------------------------

Module& register_parametrization(Module& module, const std::string& name, std::shared_ptr<Module> parametrization,
                                 bool unsafe) {
  if (!parametrization) fail("[register_parametrization] the parametrization is None");
  parametrization->train(module.is_training());
  if (is_parametrized(module, name)) {
    ParametrizationListImpl& chain = list(module, name);
    if (!unsafe) {
      Tensor y = value(module, name);
      Tensor x = run(*parametrization, {y});
      if (x.dtype() != y.dtype() || !(x.shape() == y.shape()))
        fail(
            "[register_parametrization] a parametrization may not change the dtype or shape of the tensor unless "
            "unsafe=True: module.",
            name, " is ", y.dtype(), " ", shape_text(y), ", parametrization(module.", name, ") ", x.dtype(), " ",
            shape_text(x));
      NoGradGuard no_grad;
      if (std::optional<Originals> z = inverse(*parametrization, x, true)) {
        if (!z->is_tensor) fail("[register_parametrization] parametrization.right_inverse must return a tensor");
        const Tensor& t = z->tensors.at(0);
        if (t.dtype() != y.dtype() || !(t.shape() == y.shape()))
          fail("[register_parametrization] parametrization.right_inverse must keep the dtype and shape of module.",
               name, " unless unsafe=True: ", y.dtype(), " ", shape_text(y), " became ", t.dtype(), " ", shape_text(t));
      }
    }
    chain.push_back(std::move(parametrization));
    chain.set_unsafe(chain.unsafe() || unsafe);
    return module;
  }
  const bool is_parameter = module.has_parameter(name) && module.parameter(name).defined();
  if (!is_parameter && !(module.has_buffer(name) && module.buffer(name).defined()))
    fail("[register_parametrization] ", module.type_name(), " has no parameter, buffer or parametrized tensor named \"",
         name, "\"");
  Tensor original = slot(module, name);
  auto chain = std::make_shared<ParametrizationListImpl>(std::vector<std::shared_ptr<Module>>{parametrization},
                                                         original, is_parameter, unsafe);
  slot(module, name) = Tensor();
  ParametrizationsImpl* dict = parametrizations(module);
  if (!dict) {
    size_t pre = module.register_forward_pre_hook(
        [](Module& m, const Tensor&) {
          fill_slots(m);
          return std::optional<Tensor>();
        },
        [](Module& m, const std::any&) {
          fill_slots(m);
          return std::optional<std::any>();
        });
    size_t post = module.register_forward_hook(
        [](Module& m, const Tensor&, const Tensor&) {
          empty_slots(m);
          return std::optional<Tensor>();
        },
        [](Module& m, const std::any&, const std::any&) {
          empty_slots(m);
          return std::optional<std::any>();
        });
    auto made = std::make_shared<ParametrizationsImpl>(pre, post, module.type_name());
    module.register_module("parametrizations", made);
    module.set_type_name("Parametrized" + module.type_name());
    dict = made.get();
  }
  dict->insert(name, std::move(chain));
  return module;
}

bool is_parametrized(const Module& module, const std::optional<std::string>& name) {
  ParametrizationsImpl* dict = parametrizations(module);
  if (!dict) return false;
  return name ? dict->contains(*name) : dict->size() > 0;
}

Module& remove_parametrizations(Module& module, const std::string& name, bool leave_parametrized) {
  if (!is_parametrized(module, name))
    fail("[remove_parametrizations] ", module.type_name(), " has no parametrization on \"", name, "\"");
  ParametrizationListImpl& chain = list(module, name);
  Tensor original;
  bool as_parameter, requires_grad;
  if (chain.is_tensor()) {
    as_parameter = chain.has_parameter("original");
    original = chain.originals()[0];
    requires_grad = original.requires_grad();
    if (leave_parametrized) {
      NoGradGuard no_grad;
      original.set_data(value(module, name));
    }
  } else {
    if (!leave_parametrized)
      fail(
          "[remove_parametrizations] cannot leave unparametrized (leave_parametrized=False) a tensor that is "
          "parametrized in terms of several tensors");
    Tensor t = value(module, name);
    as_parameter = requires_grad = t.requires_grad();
    original = as_parameter ? t.detach() : t;
  }
  ParametrizationsImpl* dict = parametrizations(module);
  dict->unregister(name);
  module.unregister(name);
  if (as_parameter) module.register_parameter(name, original, requires_grad);
  else module.register_buffer(name, original);
  if (dict->size() == 0) {
    module.remove_hook(dict->pre_hook());
    module.remove_hook(dict->hook());
    module.set_type_name(dict->host_type_name());
    module.unregister("parametrizations");
  }
  return module;
}

Module& transfer_parametrizations_and_params(Module& from_module, Module& to_module,
                                             const std::optional<std::string>& name) {
  if (!is_parametrized(from_module)) return to_module;
  const std::vector<std::string> names = name ? std::vector<std::string>{*name} : parametrizations(from_module)->keys();
  for (const std::string& n : names) {
    ParametrizationListImpl& from = list(from_module, n);
    if (!is_parametrized(to_module, n) && !to_module.has_parameter(n) && !to_module.has_buffer(n)) {
      NoGradGuard no_grad;
      to_module.register_parameter(n, value(from_module, n).detach().clone());
    }
    for (const auto& p : from) register_parametrization(to_module, n, p);
    ParametrizationListImpl& to = list(to_module, n);
    for (int64_t i = 0; i < from.ntensors(); ++i) {
      const std::string original = from.is_tensor() ? "original" : "original" + std::to_string(i);
      if (from.has_parameter(original)) {
        const Tensor& t = from.parameter(original);
        to.register_parameter(original, t, t.requires_grad());
      } else {
        to.register_buffer(original, from.buffer(original));
      }
    }
  }
  return to_module;
}

Tensor value(Module& module, const std::string& name) {
  list(module, name);
  if (const Tensor& filled = slot(module, name); filled.defined()) return filled;
  return compute(module, name);
}

void assign(Module& module, const std::string& name, const Tensor& value) { list(module, name).right_inverse(value); }

Cached::Cached() { ++cache_depth; }

Cached::~Cached() {
  if (--cache_depth == 0) cache.clear();
}

}  // namespace ug::nn::parametrize
