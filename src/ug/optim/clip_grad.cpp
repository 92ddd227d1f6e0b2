#include "ug/optim/clip_grad.h"

#include <cmath>

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

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads = defined_grads(parameters);
  if (grads.empty()) return scalar_tensor(0.0, Options{DType::Float32, {}});
  // As torch: the norm of the per-gradient norms, in the gradients' dtype.
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(g.norm(norm_type).to(grads[0].dtype()));
  Tensor total = stack(norms).norm(norm_type);
  if (error_if_nonfinite && !std::isfinite(total.item<double>()))
    fail<RuntimeError>("[clip_grad_norm_] the total norm of order ", norm_type,
                       " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this "
                       "error and scale the gradients by the non-finite norm anyway, set "
                       "`error_if_nonfinite=False`");
  Tensor coef = scalar_tensor(max_norm, Options{total.dtype(), {}})
                    .div(total.add(1e-6))
                    .clamp(std::optional<Scalar>(), std::optional<Scalar>(1.0));
  for (Tensor& g : grads) g.mul_(coef.to(g.dtype()));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (Tensor& g : defined_grads(parameters)) g.clamp_(Scalar(-clip_value), Scalar(clip_value));
}

}  // namespace ug::nn::utils
