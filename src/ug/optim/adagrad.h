// ug::optim::Adagrad: each element's step is scaled by the root of its summed squared
// gradients; lr_decay, weight decay and a starting accumulator value, as torch.optim.Adagrad.
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct AdagradOptions {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(double, lr_decay) = 0;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(double, initial_accumulator_value) = 0;
  UG_OPTIM_ARG(double, eps) = 1e-10;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

/** Like torch's, it makes every parameter's state on construction. */
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions options = {});
  explicit Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
