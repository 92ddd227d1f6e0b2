// ug::optim::Adamax: Adam with the infinity norm in place of the second moment, as
// torch.optim.Adamax.
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct AdamaxOptions {
  AdamaxOptions(double lr = 2e-3) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(Betas, betas) = {0.9, 0.999};
  UG_OPTIM_ARG(double, eps) = 1e-8;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class Adamax : public Optimizer {
 public:
  explicit Adamax(std::vector<Tensor> params, AdamaxOptions options = {});
  explicit Adamax(std::vector<ParamGroup> groups, AdamaxOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
