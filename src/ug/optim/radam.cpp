#include "ug/optim/radam.h"

#include <cmath>

#include "ug/optim/kernels.h"

namespace ug::optim {

RAdamOptions::operator Hyper() const {
  detail::check_common("RAdam", lr_, eps_, betas_, weight_decay_);
  return {{"lr", lr_},
          {"betas", betas_},
          {"eps", eps_},
          {"weight_decay", weight_decay_},
          {"decoupled_weight_decay", decoupled_weight_decay_},
          {"maximize", maximize_}};
}

RAdam::RAdam(std::vector<Tensor> params, RAdamOptions options)
    : RAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

RAdam::RAdam(std::vector<ParamGroup> groups, RAdamOptions defaults) : Optimizer("RAdam", std::move(groups), defaults) {}

TensorDict RAdam::init_state(const Tensor& param, const Hyper&) const {
  const Options like{param.dtype(), param.device()};
  return {{"step", detail::zero_step()},
          {"exp_avg", zeros(param.shape(), like)},
          {"exp_avg_sq", zeros(param.shape(), like)}};
}

void RAdam::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double step = detail::increment_step(state);
  const auto [beta1, beta2] = hyper_get<Betas>(h, "betas");
  const double bias_correction1 = 1 - std::pow(beta1, step), bias_correction2 = 1 - std::pow(beta2, step);
  // The length of the approximated simple moving average, and its limit.
  const double rho_inf = 2 / (1 - beta2) - 1;
  const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
  const double rect =
      rho_t > 5.0 ? std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) : 0.0;
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::RadamArgs<T> a{param.data_ptr<T>(),
                                  grad.data_ptr<T>(),
                                  state.at("exp_avg").data_ptr<T>(),
                                  state.at("exp_avg_sq").data_ptr<T>(),
                                  hyper_get<double>(h, "lr"),
                                  beta1,
                                  beta2,
                                  hyper_get<double>(h, "eps"),
                                  hyper_get<double>(h, "weight_decay"),
                                  bias_correction1,
                                  bias_correction2,
                                  rect,
                                  hyper_get<bool>(h, "decoupled_weight_decay"),
                                  hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::radam(a, b, e); });
  })
}

}  // namespace ug::optim
