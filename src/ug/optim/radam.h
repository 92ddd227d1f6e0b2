// ug::optim::RAdam: Adam whose adaptive step is rectified once the variance estimate is
// tractable (rho_t > 5) and plain momentum SGD before, as torch.optim.RAdam; weight decay as
// L2 or decoupled.
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct RAdamOptions {
  RAdamOptions(double lr = 1e-3) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(Betas, betas) = {0.9, 0.999};
  UG_OPTIM_ARG(double, eps) = 1e-8;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(bool, decoupled_weight_decay) = false;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class RAdam : public Optimizer {
 public:
  explicit RAdam(std::vector<Tensor> params, RAdamOptions options = {});
  explicit RAdam(std::vector<ParamGroup> groups, RAdamOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
