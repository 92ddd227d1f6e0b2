#include "ug/optim/functional.h"

#include <string>

#include "ug/graph/grad_mode.h"

namespace ug::optim {
namespace {

Tensor apply_one(const Tensor& p, const Tensor& u) {
  Tensor out = p.detach().add(u.detach());
  if (p.requires_grad()) out.requires_grad_(true);
  return out;
}

}  // namespace

TensorDict apply_updates(const TensorDict& params, const TensorDict& updates) {
  NoGradGuard no_grad;
  TensorDict out;
  for (const auto& [key, p] : params) {
    const Tensor* u = updates.find(key);
    out.insert(key, u && u->defined() ? apply_one(p, *u) : p);
  }
  return out;
}

std::vector<Tensor> apply_updates(const std::vector<Tensor>& params, const std::vector<Tensor>& updates) {
  if (params.size() != updates.size())
    fail<ValueError>("[apply_updates] ", params.size(), " parameters but ", updates.size(), " updates");
  NoGradGuard no_grad;
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); ++i)
    out.push_back(updates[i].defined() ? apply_one(params[i], updates[i]) : params[i]);
  return out;
}

TensorDict as_dict(const std::vector<Tensor>& tensors) {
  TensorDict out;
  for (size_t i = 0; i < tensors.size(); ++i) out.insert(std::to_string(i), tensors[i]);
  return out;
}

std::vector<Tensor> as_list(const TensorDict& dict) {
  std::vector<Tensor> out;
  for (const auto& item : dict) out.push_back(item.second);
  return out;
}

}  // namespace ug::optim
