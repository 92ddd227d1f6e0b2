// torch.nn.utils.weight_norm / spectral_norm (the hook-based forms) and their removal.
#include <algorithm>
#include <memory>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/nn/functional/activation.h"
#include "ug/nn/layers/conv.h"
#include "ug/nn/layers/conv3d.h"
#include "ug/nn/parametrizations.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"

namespace ug::nn::utils {

namespace {

struct Norm {
  std::string name;
  bool spectral;
  int64_t dim;
  int64_t iterations;
  double eps;
  size_t pre_hook = 0, hook = 0;

  /** The normalised weight; spectral: with a power-iteration step first when iterate. */
  Tensor compute(Module& m, bool iterate) const {
    if (!spectral) return weight_norm_value(m.parameter(name + "_v"), m.parameter(name + "_g"), dim);
    const Tensor& weight = m.parameter(name + "_orig");
    Tensor mat = weight;
    if (dim != 0) {
      Dims order{dim};
      for (int64_t d = 0; d < weight.dim(); ++d)
        if (d != dim) order.push_back(d);
      mat = mat.permute(order);
    }
    mat = mat.reshape({mat.size(0), -1});
    Tensor u = m.buffer(name + "_u"), v = m.buffer(name + "_v");
    if (iterate) {
      {
        NoGradGuard no_grad;
        const Tensor w = mat.detach();
        for (int64_t i = 0; i < iterations; ++i) {
          v.copy_(functional::normalize(w.mT().matmul(u), 2, 0, eps));
          u.copy_(functional::normalize(w.matmul(v), 2, 0, eps));
        }
      }
      u = u.clone();
      v = v.clone();
    }
    return weight / u.dot(mat.matmul(v));
  }
};

/** The norms applied here, by module (not owned: an entry whose Norm, owned by the hooks, is
 *  gone belonged to a module that is gone). */
struct Entry {
  const Module* module;
  std::weak_ptr<Norm> norm;
};
std::vector<Entry>& entries() {
  static std::vector<Entry> all;
  std::erase_if(all, [](const Entry& e) { return e.norm.expired(); });
  return all;
}

std::shared_ptr<Norm> find(const Module& m, const std::string& name, std::optional<bool> spectral = std::nullopt) {
  for (const Entry& e : entries())
    if (auto n = e.norm.lock(); n && e.module == &m && n->name == name && (!spectral || n->spectral == *spectral))
      return n;
  return nullptr;
}

Tensor& slot(Module& m, const std::string& name) { return m.parameter(name); }

void attach(Module& m, const std::shared_ptr<Norm>& norm) {
  std::weak_ptr<Norm> weak = norm;
  // The hooks own the Norm; they do nothing once its tensors are gone (a copy's hooks after the
  // original's removal).
  auto fill = [norm](Module& mod) {
    if (mod.has_parameter(norm->name + (norm->spectral ? "_orig" : "_v")))
      slot(mod, norm->name) = norm->compute(mod, norm->spectral && mod.is_training());
  };
  auto empty = [norm](Module& mod) {
    if (mod.has_parameter(norm->name)) slot(mod, norm->name) = Tensor();
  };
  norm->pre_hook = m.register_forward_pre_hook(
      [fill](Module& mod, const Tensor&) {
        fill(mod);
        return std::optional<Tensor>();
      },
      [fill](Module& mod, const std::any&) {
        fill(mod);
        return std::optional<std::any>();
      });
  norm->hook = m.register_forward_hook(
      [empty](Module& mod, const Tensor&, const Tensor&) {
        empty(mod);
        return std::optional<Tensor>();
      },
      [empty](Module& mod, const std::any&, const std::any&) {
        empty(mod);
        return std::optional<std::any>();
      });
  entries().push_back({&m, weak});
}

Tensor take_weight(Module& m, const std::string& name, const char* op) {
  if (!m.has_parameter(name) || !m.parameter(name).defined())
    fail("[", op, "] ", m.type_name(), " has no parameter \"", name, "\"");
  return m.parameter(name);
}

}  // namespace

Module& weight_norm(Module& module, const std::string& name, std::optional<int64_t> dim) {
  if (find(module, name, false))
    fail("[weight_norm] cannot register two weight_norm hooks on the same parameter ", name);
  Tensor weight = take_weight(module, name, "weight_norm");
  auto norm = std::make_shared<Norm>(Norm{name, false, dim.value_or(-1), 0, 0});
  NoGradGuard no_grad;
  module.register_parameter(name + "_g", norm_except_dim(weight, norm->dim).detach());
  module.register_parameter(name + "_v", weight.detach());
  slot(module, name) = Tensor();
  attach(module, norm);
  return module;
}

Module& spectral_norm(Module& module, const std::string& name, int64_t n_power_iterations, double eps,
                      std::optional<int64_t> dim) {
  if (find(module, name, true))
    fail("[spectral_norm] cannot register two spectral_norm hooks on the same parameter ", name);
  if (n_power_iterations <= 0)
    fail("[spectral_norm] expected n_power_iterations to be positive, but got n_power_iterations=", n_power_iterations);
  Tensor weight = take_weight(module, name, "spectral_norm");
  if (!dim) {
    const bool transposed = dynamic_cast<ConvTranspose1dImpl*>(&module) ||
                            dynamic_cast<ConvTranspose2dImpl*>(&module) || dynamic_cast<ConvTranspose3dImpl*>(&module);
    dim = transposed ? 1 : 0;
  }
  const int64_t nd = weight.dim();
  if (*dim >= nd || *dim < -nd)
    fail<IndexError>("[spectral_norm] dim ", *dim, " is out of range for a weight of ", nd, " dims");
  auto norm = std::make_shared<Norm>(Norm{name, true, *dim < 0 ? *dim + nd : *dim, n_power_iterations, eps});
  {
    NoGradGuard no_grad;
    Tensor mat = weight.detach().movedim(norm->dim, 0);
    mat = mat.reshape({mat.size(0), -1});
    const Options opts{.dtype = mat.dtype(), .device = mat.device()};
    Tensor u = functional::normalize(randn({mat.size(0)}, opts), 2, 0, eps);
    Tensor v = functional::normalize(randn({mat.size(1)}, opts), 2, 0, eps);
    slot(module, name) = Tensor();
    module.register_parameter(name + "_orig", weight, weight.requires_grad());
    module.register_buffer(name + "_u", u);
    module.register_buffer(name + "_v", v);
  }
  attach(module, norm);
  return module;
}

namespace {

Module& remove(Module& module, const std::string& name, bool spectral) {
  std::shared_ptr<Norm> norm = find(module, name, spectral);
  if (!norm)
    fail("[remove_", spectral ? "spectral_norm" : "weight_norm", "] ", spectral ? "spectral_norm" : "weight_norm",
         " of '", name, "' not found in ", module.type_name());
  Tensor weight;
  {
    NoGradGuard no_grad;
    weight = norm->compute(module, false).detach();
  }
  module.remove_hook(norm->pre_hook);
  module.remove_hook(norm->hook);
  module.unregister(name);
  for (const char* suffix :
       spectral ? std::vector<const char*>{"_u", "_v", "_orig"} : std::vector<const char*>{"_g", "_v"})
    module.unregister(name + suffix);
  module.register_parameter(name, weight);
  std::erase_if(entries(), [&](const Entry& e) { return e.norm.lock() == norm; });
  return module;
}

}  // namespace

Module& remove_weight_norm(Module& module, const std::string& name) { return remove(module, name, false); }

Module& remove_spectral_norm(Module& module, const std::string& name) { return remove(module, name, true); }

std::optional<Tensor> normalized_weight(Module& module, const std::string& name) {
  if (!module.has_parameter(name) || module.parameter(name).defined()) return std::nullopt;
  std::shared_ptr<Norm> norm = find(module, name);
  if (!norm) return std::nullopt;
  return norm->compute(module, false);
}

}  // namespace ug::nn::utils
