#include "ug/optim/adam.h"

#include <algorithm>

#include "ug/optim/kernels.h"

namespace ug::optim {
namespace {

Hyper adam_hyper(const char* name, double lr, std::pair<double, double> betas, double eps, double weight_decay,
                 bool amsgrad, bool maximize, bool decoupled) {
  if (lr < 0) fail<ValueError>("[", name, "] invalid learning rate: ", lr);
  if (eps < 0) fail<ValueError>("[", name, "] invalid epsilon value: ", eps);
  if (betas.first < 0 || betas.first >= 1)
    fail<ValueError>("[", name, "] invalid beta parameter at index 0: ", betas.first);
  if (betas.second < 0 || betas.second >= 1)
    fail<ValueError>("[", name, "] invalid beta parameter at index 1: ", betas.second);
  if (weight_decay < 0) fail<ValueError>("[", name, "] invalid weight_decay value: ", weight_decay);
  return {{"lr", lr},
          {"betas", betas},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"amsgrad", amsgrad},
          {"maximize", maximize},
          {"decoupled_weight_decay", decoupled}};
}

std::vector<ParamGroup> one_group(std::vector<Tensor> params) { return {ParamGroup(std::move(params))}; }

/** The kernel's arguments: the parameter written in place, its state's arrays, the group's
 *  hyperparameters at this step. */
template <class T>
kernels::AdamArgs<T> adam_args(const Hyper& h, const Tensor& param, const Tensor& grad, const TensorDict& state,
                               bool amsgrad, double step) {
  const auto [beta1, beta2] = hyper_get<std::pair<double, double>>(h, "betas");
  return {param.data_ptr<T>(),
          grad.data_ptr<T>(),
          state.at("exp_avg").data_ptr<T>(),
          state.at("exp_avg_sq").data_ptr<T>(),
          amsgrad ? state.at("max_exp_avg_sq").data_ptr<T>() : nullptr,
          hyper_get<double>(h, "lr"),
          beta1,
          beta2,
          hyper_get<double>(h, "eps"),
          hyper_get<double>(h, "weight_decay"),
          step,
          hyper_get<bool>(h, "decoupled_weight_decay"),
          hyper_get<bool>(h, "maximize")};
}

/** Where an update of param goes: over g (contiguous, param's shape and dtype) where the caller
 *  drops it after (the kernel reads element i before it writes it), else a fresh tensor. */
Tensor update_buffer(const Tensor& param, const Tensor& g, bool grad_dies) {
  return grad_dies ? g : empty(param.shape(), Options{param.dtype(), param.device()});
}

/** Whether state[name] is an array of param's shape and dtype (not the step counter). */
bool state_array(const TensorDict& state, const std::string& name, const Tensor& param) {
  const Tensor* t = state.find(name);
  return t && name != "step" && t->shape() == param.shape() && t->dtype() == param.dtype();
}

/** Whether the state of param is made (by a first step) and the kernels can run on the CPU. */
bool made(const TensorDict& state, const Tensor& param, bool amsgrad) {
  return state.find("step") && state_array(state, "exp_avg", param) && state_array(state, "exp_avg_sq", param) &&
         (!amsgrad || state_array(state, "max_exp_avg_sq", param)) && param.device().type == DeviceType::CPU;
}

}  // namespace

AdamOptions::operator Hyper() const {
  return adam_hyper("Adam", lr_, betas_, eps_, weight_decay_, amsgrad_, maximize_, decoupled_weight_decay_);
}

AdamWOptions::operator Hyper() const {
  return adam_hyper("AdamW", lr_, betas_, eps_, weight_decay_, amsgrad_, maximize_, true);
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(one_group(std::move(params)), options) {}
Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults) : Adam("Adam", std::move(groups), defaults) {}
Adam::Adam(std::string name, std::vector<ParamGroup> groups, Hyper defaults)
    : Optimizer(std::move(name), std::move(groups), std::move(defaults)) {}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : AdamW(one_group(std::move(params)), options) {}
AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults) : Adam("AdamW", std::move(groups), defaults) {}

TensorDict Adam::init_state(const Tensor& param, const Hyper& h) const {
  TensorDict st{{"step", detail::zero_step()},
                {"exp_avg", zeros(param.shape(), Options{param.dtype(), param.device()})},
                {"exp_avg_sq", zeros(param.shape(), Options{param.dtype(), param.device()})}};
  if (hyper_get<bool>(h, "amsgrad"))
    st.insert("max_exp_avg_sq", zeros(param.shape(), Options{param.dtype(), param.device()}));
  return st;
}

std::pair<Tensor, TensorDict> Adam::update_fresh(const Hyper& h, const Tensor& param, const Tensor& grad,
                                                 const TensorDict& state, bool applied, bool grad_dies) const {
  const bool amsgrad = hyper_get<bool>(h, "amsgrad");
  auto array = [&](const std::string& name) { return state_array(state, name, param); };
  if (!made(state, param, amsgrad))
    return Optimizer::update_fresh(h, param, grad, state, applied);  // the first step makes the state
  check_update(param, grad);
  const Tensor p_in = param.contiguous(), g = grad.contiguous();
  Tensor update = update_buffer(param, g, grad_dies);
  TensorDict in, next;  // next in state's order: a compiled step's replay pairs them by position
  for (const auto& [name, t] : state) {
    in.insert(name, array(name) ? t.contiguous() : t);
    next.insert(name, array(name) ? empty(t.shape(), Options{t.dtype(), t.device()}) : t.clone());
  }
  const double step = detail::increment_step(next);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    kernels::AdamArgs<T> a = adam_args<T>(h, update, g, next, amsgrad, step);
    a.param_in = p_in.data_ptr<T>();
    a.exp_avg_in = in.at("exp_avg").data_ptr<T>();
    a.exp_avg_sq_in = in.at("exp_avg_sq").data_ptr<T>();
    a.max_exp_avg_sq_in = amsgrad ? in.at("max_exp_avg_sq").data_ptr<T>() : nullptr;
    a.applied = applied;
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::adam(a, b, e); });
  })
  return {std::move(update), std::move(next)};
}

Tensor Adam::update_owned(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state, bool applied,
                          bool grad_dies) const {
  const bool amsgrad = hyper_get<bool>(h, "amsgrad");
  const bool in_place = std::all_of(state.begin(), state.end(), [](const auto& e) { return e.second.is_contiguous(); });
  if (!made(state, param, amsgrad) || !in_place) return Optimizer::update_owned(h, param, grad, state, applied);
  check_update(param, grad);
  const Tensor p_in = param.contiguous(), g = grad.contiguous();
  Tensor update = update_buffer(param, g, grad_dies);
  const double step = detail::increment_step(state);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    kernels::AdamArgs<T> a = adam_args<T>(h, update, g, state, amsgrad, step);  // the state in place
    a.param_in = p_in.data_ptr<T>();
    a.applied = applied;
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::adam(a, b, e); });
  })
  return update;
}

void Adam::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const bool amsgrad = hyper_get<bool>(h, "amsgrad");
  if (amsgrad && !state.contains("max_exp_avg_sq"))
    state.insert("max_exp_avg_sq", zeros(param.shape(), Options{param.dtype(), param.device()}));
  const double step = detail::increment_step(state);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::AdamArgs<T> a = adam_args<T>(h, param, grad, state, amsgrad, step);
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::adam(a, b, e); });
  })
}

}  // namespace ug::optim
