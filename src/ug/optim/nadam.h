// ug::optim::NAdam: Adam with Nesterov momentum and a momentum schedule (momentum_decay), as
// torch.optim.NAdam; weight decay as L2 or decoupled (NAdamW).
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct NAdamOptions {
  NAdamOptions(double lr = 2e-3) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(Betas, betas) = {0.9, 0.999};
  UG_OPTIM_ARG(double, eps) = 1e-8;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(double, momentum_decay) = 4e-3;
  UG_OPTIM_ARG(bool, decoupled_weight_decay) = false;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class NAdam : public Optimizer {
 public:
  explicit NAdam(std::vector<Tensor> params, NAdamOptions options = {});
  explicit NAdam(std::vector<ParamGroup> groups, NAdamOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  bool scalar_state(const std::string& key) const override { return key == "mu_product"; }
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
