#include "ug/optim/adagrad.h"

#include "ug/graph/grad_mode.h"
#include "ug/optim/kernels.h"

namespace ug::optim {

AdagradOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[Adagrad] invalid learning rate: ", lr_);
  if (lr_decay_ < 0) fail<ValueError>("[Adagrad] invalid lr_decay value: ", lr_decay_);
  if (weight_decay_ < 0) fail<ValueError>("[Adagrad] invalid weight_decay value: ", weight_decay_);
  if (initial_accumulator_value_ < 0)
    fail<ValueError>("[Adagrad] invalid initial_accumulator_value value: ", initial_accumulator_value_);
  if (eps_ < 0) fail<ValueError>("[Adagrad] invalid epsilon value: ", eps_);
  return {{"lr", lr_},
          {"lr_decay", lr_decay_},
          {"weight_decay", weight_decay_},
          {"initial_accumulator_value", initial_accumulator_value_},
          {"eps", eps_},
          {"maximize", maximize_}};
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
    : Optimizer("Adagrad", std::move(groups), defaults) {
  NoGradGuard no_grad;
  for (ParamGroup& g : param_groups())
    for (const Tensor& p : g.params()) state(p) = init_state(p, g.options());
}

TensorDict Adagrad::init_state(const Tensor& param, const Hyper& h) const {
  return {{"step", detail::zero_step()},
          {"sum", full(param.shape(), hyper_get<double>(h, "initial_accumulator_value"),
                       Options{param.dtype(), param.device()})}};
}

void Adagrad::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double step = detail::increment_step(state);
  const double lr = hyper_get<double>(h, "lr");
  const double clr = lr / (1 + (step - 1) * hyper_get<double>(h, "lr_decay"));
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::AdagradArgs<T> a{param.data_ptr<T>(),           grad.data_ptr<T>(),
                                    state.at("sum").data_ptr<T>(), clr,
                                    hyper_get<double>(h, "eps"),   hyper_get<double>(h, "weight_decay"),
                                    hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::adagrad(a, b, e); });
  })
}

}  // namespace ug::optim
