// ug::optim::Rprop: resilient backpropagation, each element's step size grown while its
// gradient keeps its sign and shrunk when it flips, as torch.optim.Rprop.
#pragma once

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct RpropOptions {
  RpropOptions(double lr = 1e-2) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(Betas, etas) = {0.5, 1.2};        // (etaminus, etaplus)
  UG_OPTIM_ARG(Betas, step_sizes) = {1e-6, 50};  // (min, max)
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class Rprop : public Optimizer {
 public:
  explicit Rprop(std::vector<Tensor> params, RpropOptions options = {});
  explicit Rprop(std::vector<ParamGroup> groups, RpropOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
