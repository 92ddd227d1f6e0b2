#include "ug/optim/adamax.h"

#include <cmath>

#include "ug/optim/kernels.h"

namespace ug::optim {

AdamaxOptions::operator Hyper() const {
  detail::check_common("Adamax", lr_, eps_, betas_, weight_decay_);
  return {{"lr", lr_}, {"betas", betas_}, {"eps", eps_}, {"weight_decay", weight_decay_}, {"maximize", maximize_}};
}

Adamax::Adamax(std::vector<Tensor> params, AdamaxOptions options)
    : Adamax(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adamax::Adamax(std::vector<ParamGroup> groups, AdamaxOptions defaults)
    : Optimizer("Adamax", std::move(groups), defaults) {}

TensorDict Adamax::init_state(const Tensor& param, const Hyper&) const {
  const Options like{param.dtype(), param.device()};
  return {
      {"step", detail::zero_step()}, {"exp_avg", zeros(param.shape(), like)}, {"exp_inf", zeros(param.shape(), like)}};
}

void Adamax::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double step = detail::increment_step(state);
  const auto [beta1, beta2] = hyper_get<Betas>(h, "betas");
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::AdamaxArgs<T> a{param.data_ptr<T>(),
                                   grad.data_ptr<T>(),
                                   state.at("exp_avg").data_ptr<T>(),
                                   state.at("exp_inf").data_ptr<T>(),
                                   hyper_get<double>(h, "lr") / (1 - std::pow(beta1, step)),
                                   beta1,
                                   beta2,
                                   hyper_get<double>(h, "eps"),
                                   hyper_get<double>(h, "weight_decay"),
                                   hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::adamax(a, b, e); });
  })
}

}  // namespace ug::optim
