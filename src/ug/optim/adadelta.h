// ug::optim::Adadelta: steps scaled by the ratio of running RMS of past updates to that of the
// gradients, as torch.optim.Adadelta.
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct AdadeltaOptions {
  AdadeltaOptions(double lr = 1.0) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(double, rho) = 0.9;
  UG_OPTIM_ARG(double, eps) = 1e-6;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class Adadelta : public Optimizer {
 public:
  explicit Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {});
  explicit Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
