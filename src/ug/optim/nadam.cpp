#include "ug/optim/nadam.h"

#include <cmath>

#include "ug/optim/kernels.h"

namespace ug::optim {

NAdamOptions::operator Hyper() const {
  detail::check_common("NAdam", lr_, eps_, betas_, weight_decay_);
  if (momentum_decay_ < 0) fail<ValueError>("[NAdam] Invalid momentum_decay value: ", momentum_decay_);
  return {{"lr", lr_},
          {"betas", betas_},
          {"eps", eps_},
          {"weight_decay", weight_decay_},
          {"momentum_decay", momentum_decay_},
          {"decoupled_weight_decay", decoupled_weight_decay_},
          {"maximize", maximize_}};
}

NAdam::NAdam(std::vector<Tensor> params, NAdamOptions options)
    : NAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

NAdam::NAdam(std::vector<ParamGroup> groups, NAdamOptions defaults) : Optimizer("NAdam", std::move(groups), defaults) {}

TensorDict NAdam::init_state(const Tensor& param, const Hyper&) const {
  const Options like{param.dtype(), param.device()};
  Tensor mu_product = detail::zero_step();
  mu_product.fill_(1.0);
  return {{"step", detail::zero_step()},
          {"mu_product", mu_product},
          {"exp_avg", zeros(param.shape(), like)},
          {"exp_avg_sq", zeros(param.shape(), like)}};
}

void NAdam::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double step = detail::increment_step(state);
  const auto [beta1, beta2] = hyper_get<Betas>(h, "betas");
  const double lr = hyper_get<double>(h, "lr"), momentum_decay = hyper_get<double>(h, "momentum_decay");
  const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, step * momentum_decay));
  const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (step + 1) * momentum_decay));
  // torch's mu_product *= mu: the product is kept in the step counter's dtype.
  const Tensor& mu_t = state.at("mu_product");
  double mu_product;
  if (mu_t.dtype() == DType::Float64) mu_product = *mu_t.data_ptr<double>() *= mu;
  else mu_product = *mu_t.data_ptr<float>() *= static_cast<float>(mu);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::NadamArgs<T> a{param.data_ptr<T>(),
                                  grad.data_ptr<T>(),
                                  state.at("exp_avg").data_ptr<T>(),
                                  state.at("exp_avg_sq").data_ptr<T>(),
                                  lr,
                                  beta1,
                                  beta2,
                                  hyper_get<double>(h, "eps"),
                                  hyper_get<double>(h, "weight_decay"),
                                  1 - std::pow(beta2, step),
                                  -lr * (1.0 - mu) / (1.0 - mu_product),
                                  (-lr * mu_next) / (1.0 - mu_product * mu_next),
                                  hyper_get<bool>(h, "decoupled_weight_decay"),
                                  hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::nadam(a, b, e); });
  })
}

}  // namespace ug::optim
