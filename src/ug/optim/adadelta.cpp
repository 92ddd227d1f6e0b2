#include "ug/optim/adadelta.h"

#include "ug/optim/kernels.h"

namespace ug::optim {

AdadeltaOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[Adadelta] Invalid learning rate: ", lr_);
  if (rho_ < 0 || rho_ > 1) fail<ValueError>("[Adadelta] Invalid rho value: ", rho_);
  if (eps_ < 0) fail<ValueError>("[Adadelta] Invalid epsilon value: ", eps_);
  if (weight_decay_ < 0) fail<ValueError>("[Adadelta] Invalid weight_decay value: ", weight_decay_);
  return {{"lr", lr_}, {"rho", rho_}, {"eps", eps_}, {"weight_decay", weight_decay_}, {"maximize", maximize_}};
}

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions options)
    : Adadelta(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adadelta::Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions defaults)
    : Optimizer("Adadelta", std::move(groups), defaults) {}

TensorDict Adadelta::init_state(const Tensor& param, const Hyper&) const {
  const Options like{param.dtype(), param.device()};
  return {{"step", detail::zero_step()},
          {"square_avg", zeros(param.shape(), like)},
          {"acc_delta", zeros(param.shape(), like)}};
}

void Adadelta::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  detail::increment_step(state);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::AdadeltaArgs<T> a{param.data_ptr<T>(),
                                     grad.data_ptr<T>(),
                                     state.at("square_avg").data_ptr<T>(),
                                     state.at("acc_delta").data_ptr<T>(),
                                     hyper_get<double>(h, "lr"),
                                     hyper_get<double>(h, "rho"),
                                     hyper_get<double>(h, "eps"),
                                     hyper_get<double>(h, "weight_decay"),
                                     hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::adadelta(a, b, e); });
  })
}

}  // namespace ug::optim
