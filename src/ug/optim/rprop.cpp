#include "ug/optim/rprop.h"

#include "ug/optim/kernels.h"

namespace ug::optim {

RpropOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[Rprop] Invalid learning rate: ", lr_);
  if (!(0 < etas_.first && etas_.first < 1 && 1 < etas_.second))
    fail<ValueError>("[Rprop] Invalid eta values: ", etas_.first, ", ", etas_.second);
  return {{"lr", lr_}, {"etas", etas_}, {"step_sizes", step_sizes_}, {"maximize", maximize_}};
}

Rprop::Rprop(std::vector<Tensor> params, RpropOptions options)
    : Rprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Rprop::Rprop(std::vector<ParamGroup> groups, RpropOptions defaults) : Optimizer("Rprop", std::move(groups), defaults) {}

TensorDict Rprop::init_state(const Tensor& param, const Hyper& h) const {
  const Options like{param.dtype(), param.device()};
  return {{"step", detail::zero_step()},
          {"prev", zeros(param.shape(), like)},
          {"step_size", full(param.shape(), hyper_get<double>(h, "lr"), like)}};
}

void Rprop::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  detail::increment_step(state);
  const auto [etaminus, etaplus] = hyper_get<Betas>(h, "etas");
  const auto [step_size_min, step_size_max] = hyper_get<Betas>(h, "step_sizes");
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::RpropArgs<T> a{param.data_ptr<T>(),
                                  grad.data_ptr<T>(),
                                  state.at("prev").data_ptr<T>(),
                                  state.at("step_size").data_ptr<T>(),
                                  etaminus,
                                  etaplus,
                                  step_size_min,
                                  step_size_max,
                                  hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::rprop(a, b, e); });
  })
}

}  // namespace ug::optim
