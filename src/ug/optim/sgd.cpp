#include "ug/optim/sgd.h"

#include "ug/optim/kernels.h"

namespace ug::optim {

SGDOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[SGD] invalid learning rate: ", lr_);
  if (momentum_ < 0) fail<ValueError>("[SGD] invalid momentum value: ", momentum_);
  if (weight_decay_ < 0) fail<ValueError>("[SGD] invalid weight_decay value: ", weight_decay_);
  if (nesterov_ && (momentum_ <= 0 || dampening_ != 0))
    fail<ValueError>("[SGD] Nesterov momentum requires a momentum and zero dampening");
  return {{"lr", lr_},
          {"momentum", momentum_},
          {"dampening", dampening_},
          {"weight_decay", weight_decay_},
          {"nesterov", nesterov_},
          {"maximize", maximize_}};
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults) : Optimizer("SGD", std::move(groups), defaults) {}

// The momentum buffer is made on the first step, from that step's gradient.
TensorDict SGD::init_state(const Tensor&, const Hyper&) const { return {}; }

void SGD::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double momentum = hyper_get<double>(h, "momentum");
  const bool first = momentum != 0 && !state.contains("momentum_buffer");
  if (first) state.insert("momentum_buffer", empty_like(param));
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::SgdArgs<T> a{param.data_ptr<T>(),
                                grad.data_ptr<T>(),
                                momentum != 0 ? state.at("momentum_buffer").data_ptr<T>() : nullptr,
                                hyper_get<double>(h, "lr"),
                                momentum,
                                hyper_get<double>(h, "dampening"),
                                hyper_get<double>(h, "weight_decay"),
                                hyper_get<bool>(h, "nesterov"),
                                hyper_get<bool>(h, "maximize"),
                                first};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::sgd(a, b, e); });
  })
}

}  // namespace ug::optim
