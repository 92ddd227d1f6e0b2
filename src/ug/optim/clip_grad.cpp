#include "ug/optim/clip_grad.h"

#include <cmath>

#include "ug/core/value_read.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/join.h"

namespace ug::nn::utils {
namespace {

std::vector<Tensor> defined_grads(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (Tensor g = p.grad(); g.defined()) grads.push_back(g.detach());
  return grads;
}

}  // namespace

Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type, bool error_if_nonfinite) {
  NoGradGuard no_grad;
  if (tensors.empty()) return scalar_tensor(0.0, Options{DType::Float32, {}});
  // As torch: the norm of the per-tensor norms, in the first tensor's dtype.
  std::vector<Tensor> norms;
  for (const Tensor& t : tensors) norms.push_back(t.detach().norm(norm_type).to(tensors[0].dtype()));
  Tensor total = stack(norms).norm(norm_type);
  ValueReadScope check;
  if (error_if_nonfinite && !std::isfinite(total.item<double>()))
    fail<RuntimeError>("[get_total_norm] the total norm of order ", norm_type,
                       " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this "
                       "error and scale the gradients by the non-finite norm anyway, set "
                       "`error_if_nonfinite=False`");
  return total;
}

void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm, const Tensor& total_norm) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads = defined_grads(parameters);
  if (grads.empty()) return;
  Tensor coef = scalar_tensor(max_norm, Options{total_norm.dtype(), {}})
                    .div(total_norm.detach().add(1e-6))
                    .clamp(std::optional<Scalar>(), std::optional<Scalar>(1.0));
  for (Tensor& g : grads) g.mul_(coef.to(g.dtype()));
}

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  const Tensor total = get_total_norm(defined_grads(parameters), norm_type, error_if_nonfinite);
  clip_grads_with_norm_(parameters, max_norm, total);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (Tensor& g : defined_grads(parameters)) g.clamp_(Scalar(-clip_value), Scalar(clip_value));
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> flat;
  for (const Tensor& p : parameters) flat.push_back(p.reshape({p.numel()}));
  if (flat.empty()) fail<ValueError>("[parameters_to_vector] got no parameters");
  return cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  if (vec.dim() != 1 || vec.numel() < total)
    fail<ValueError>("[vector_to_parameters] a vector of shape ", vec.shape(), " for parameters of ", total,
                     " elements in all");
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : parameters) {
    Tensor(p).copy_(vec.detach().narrow(0, offset, p.numel()).reshape(p.shape()));
    offset += p.numel();
  }
}

}  // namespace ug::nn::utils
