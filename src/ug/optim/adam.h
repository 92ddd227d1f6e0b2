// ug::optim::Adam and AdamW: Adam with L2 weight decay folded into the gradient, or (AdamW,
// decoupled_weight_decay) applied to the parameter; amsgrad and maximize, as torch.optim.
#pragma once

#include <utility>

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct AdamOptions {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(Betas, betas) = {0.9, 0.999};
  UG_OPTIM_ARG(double, eps) = 1e-8;
  UG_OPTIM_ARG(double, weight_decay) = 0;
  UG_OPTIM_ARG(bool, amsgrad) = false;
  UG_OPTIM_ARG(bool, maximize) = false;
  UG_OPTIM_ARG(bool, decoupled_weight_decay) = false;

 public:
  operator Hyper() const;
};

/** AdamW's options: Adam's with decoupled decay and weight_decay 1e-2 by default. */
struct AdamWOptions {
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(Betas, betas) = {0.9, 0.999};
  UG_OPTIM_ARG(double, eps) = 1e-8;
  UG_OPTIM_ARG(double, weight_decay) = 1e-2;
  UG_OPTIM_ARG(bool, amsgrad) = false;
  UG_OPTIM_ARG(bool, maximize) = false;

 public:
  operator Hyper() const;
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  explicit Adam(std::vector<ParamGroup> groups, AdamOptions defaults = {});

 protected:
  Adam(std::string name, std::vector<ParamGroup> groups, Hyper defaults);
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
  std::pair<Tensor, TensorDict> update_fresh(const Hyper& group, const Tensor& param, const Tensor& grad,
                                             const TensorDict& state, bool applied = false,
                                             bool grad_dies = false) const override;
  Tensor update_owned(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state, bool applied,
                      bool grad_dies = false) const override;
};

class AdamW : public Adam {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = {});
};

}  // namespace ug::optim
