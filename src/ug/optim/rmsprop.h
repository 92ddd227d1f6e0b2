// ug::optim::RMSprop: a running average of squared gradients scales each step; optional
// momentum, centering (subtracting the squared running mean) and weight decay, as torch's.
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct RMSpropOptions {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(double, alpha) = 0.99;
  UG_OPTIM_ARG(double, eps) = 1e-8;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(double, momentum) = 0;
  UG_OPTIM_ARG(bool, centered) = false;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});
  explicit RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
