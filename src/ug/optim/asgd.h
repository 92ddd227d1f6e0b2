// ug::optim::ASGD: averaged stochastic gradient descent, as torch.optim.ASGD: SGD with a
// decaying step size eta and a running average ax of the iterates (averaging from step t0 on).
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct ASGDOptions {
  ASGDOptions(double lr = 1e-2) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(double, lambd) = 1e-4;
  UG_OPTIM_ARG(double, alpha) = 0.75;
  UG_OPTIM_ARG(double, t0) = 1e6;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class ASGD : public Optimizer {
 public:
  explicit ASGD(std::vector<Tensor> params, ASGDOptions options = {});
  explicit ASGD(std::vector<ParamGroup> groups, ASGDOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  bool scalar_state(const std::string& key) const override { return key == "eta" || key == "mu"; }
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
