// ug::optim::SGD: stochastic gradient descent with momentum, dampening, Nesterov momentum,
// weight decay and maximize, as torch.optim.SGD.
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct SGDOptions {
  SGDOptions(double lr = 1e-3) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(double, momentum) = 0;
  UG_OPTIM_ARG(double, dampening) = 0;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(bool, nesterov) = false;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  explicit SGD(std::vector<ParamGroup> groups, SGDOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
