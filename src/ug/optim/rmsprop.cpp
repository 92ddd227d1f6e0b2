#include "ug/optim/rmsprop.h"

#include "ug/optim/kernels.h"

namespace ug::optim {

RMSpropOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[RMSprop] invalid learning rate: ", lr_);
  if (eps_ < 0) fail<ValueError>("[RMSprop] invalid epsilon value: ", eps_);
  if (momentum_ < 0) fail<ValueError>("[RMSprop] invalid momentum value: ", momentum_);
  if (weight_decay_ < 0) fail<ValueError>("[RMSprop] invalid weight_decay value: ", weight_decay_);
  if (alpha_ < 0) fail<ValueError>("[RMSprop] invalid alpha value: ", alpha_);
  return {{"lr", lr_},
          {"alpha", alpha_},
          {"eps", eps_},
          {"weight_decay", weight_decay_},
          {"momentum", momentum_},
          {"centered", centered_},
          {"maximize", maximize_}};
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer("RMSprop", std::move(groups), defaults) {}

TensorDict RMSprop::init_state(const Tensor& param, const Hyper& h) const {
  const Options like{param.dtype(), param.device()};
  TensorDict st{{"step", detail::zero_step()}, {"square_avg", zeros(param.shape(), like)}};
  if (hyper_get<double>(h, "momentum") > 0) st.insert("momentum_buffer", zeros(param.shape(), like));
  if (hyper_get<bool>(h, "centered")) st.insert("grad_avg", zeros(param.shape(), like));
  return st;
}

void RMSprop::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double momentum = hyper_get<double>(h, "momentum");
  const bool centered = hyper_get<bool>(h, "centered");
  // Options switched on after the first step start their state at zero, as at the start.
  if (momentum > 0 && !state.contains("momentum_buffer"))
    state.insert("momentum_buffer", zeros(param.shape(), Options{param.dtype(), param.device()}));
  if (centered && !state.contains("grad_avg"))
    state.insert("grad_avg", zeros(param.shape(), Options{param.dtype(), param.device()}));
  detail::increment_step(state);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::RmspropArgs<T> a{param.data_ptr<T>(),
                                    grad.data_ptr<T>(),
                                    state.at("square_avg").data_ptr<T>(),
                                    momentum > 0 ? state.at("momentum_buffer").data_ptr<T>() : nullptr,
                                    centered ? state.at("grad_avg").data_ptr<T>() : nullptr,
                                    hyper_get<double>(h, "lr"),
                                    hyper_get<double>(h, "alpha"),
                                    hyper_get<double>(h, "eps"),
                                    hyper_get<double>(h, "weight_decay"),
                                    momentum,
                                    hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::rmsprop(a, b, e); });
  })
}

}  // namespace ug::optim
