// ug::optim::Adafactor: torch.optim.Adafactor's variant (torch 2.5+): a second moment factored
// into row and column means for parameters of 2 or more dimensions (a full one for vectors), a
// decay 1 - beta2 = step^beta2_decay, relative step sizes and update clipping at d.
#pragma once

#include <limits>

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct AdafactorOptions {
  AdafactorOptions(double lr = 1e-2) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(double, beta2_decay) = -0.8;
  /** (eps1, eps2): eps1 NaN stands for torch's None, the machine epsilon of the parameters' dtype. */
  UG_OPTIM_ARG(Betas, eps) = {std::numeric_limits<double>::quiet_NaN(), 1e-3};
  UG_OPTIM_ARG(double, d) = 1.0;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class Adafactor : public Optimizer {
 public:
  explicit Adafactor(std::vector<Tensor> params, AdafactorOptions options = {});
  explicit Adafactor(std::vector<ParamGroup> groups, AdafactorOptions defaults = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  bool flat_state(const std::string& key) const override { return key == "row_var" || key == "col_var"; }
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
