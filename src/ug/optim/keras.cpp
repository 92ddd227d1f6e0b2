#include "ug/optim/keras.h"

#include <algorithm>

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/unary.h"
#include "ug/optim/kernels.h"

namespace ug::optim::keras {
namespace {

/** The options every Keras optimizer has; an unset weight decay or clip is stored as 0. */
Hyper common(const char* name, double lr, std::optional<double> weight_decay, std::optional<double> clipnorm,
             std::optional<double> clipvalue, std::optional<double> global_clipnorm) {
  if (!(lr >= 0)) fail<ValueError>("[", name, "] learning_rate must be non-negative, got ", lr);
  if (weight_decay && !(*weight_decay >= 0))
    fail<ValueError>("[", name, "] weight_decay must be non-negative, got ", *weight_decay);
  if (clipnorm.has_value() + clipvalue.has_value() + global_clipnorm.has_value() > 1)
    fail<ValueError>("[", name, "] only one of clipnorm, clipvalue and global_clipnorm can be set");
  for (const auto& [key, v] :
       {std::pair{"clipnorm", clipnorm}, {"clipvalue", clipvalue}, {"global_clipnorm", global_clipnorm}})
    if (v && !(*v > 0)) fail<ValueError>("[", name, "] ", key, " must be positive, got ", *v);
  return {{"lr", lr},
          {"weight_decay", weight_decay.value_or(0)},
          {"clipnorm", clipnorm.value_or(0)},
          {"clipvalue", clipvalue.value_or(0)},
          {"global_clipnorm", global_clipnorm.value_or(0)}};
}

void check_unit(const char* name, const char* key, double v, bool closed) {
  if (!(v >= 0 && (closed ? v <= 1 : v < 1)))
    fail<ValueError>("[", name, "] ", key, " must be in [0, 1", closed ? "]" : ")", ", got ", v);
}

void check_epsilon(const char* name, double eps) {
  if (!(eps >= 0)) fail<ValueError>("[", name, "] epsilon must be non-negative, got ", eps);
}

Hyper adam_hyper(const char* name, Hyper h, double beta_1, double beta_2, double epsilon, bool amsgrad) {
  check_unit(name, "beta_1", beta_1, false);
  check_unit(name, "beta_2", beta_2, false);
  check_epsilon(name, epsilon);
  h.insert("beta_1", beta_1);
  h.insert("beta_2", beta_2);
  h.insert("epsilon", epsilon);
  h.insert("amsgrad", amsgrad);
  return h;
}

Tensor zeros_as(const Tensor& p) { return zeros(p.shape(), Options{p.dtype(), p.device()}); }

/** Keras's clipping of one step's gradients (base_optimizer._clip_gradients). */
void clip(const Hyper& h, std::vector<Tensor>& grads) {
  const double clipnorm = hyper_get<double>(h, "clipnorm"), clipvalue = hyper_get<double>(h, "clipvalue");
  const double global_clipnorm = hyper_get<double>(h, "global_clipnorm");
  if (clipnorm > 0) {
    // tf.clip_by_norm: g * clipnorm / max(|g|, clipnorm)
    for (Tensor& g : grads) g = g.mul(clipnorm).div(maximum(sqrt(g.square().sum()), Scalar(clipnorm)));
  } else if (global_clipnorm > 0 && !grads.empty()) {
    Tensor squared = grads[0].square().sum();
    for (size_t i = 1; i < grads.size(); ++i) squared = squared.add(grads[i].square().sum().to(squared.dtype()));
    const Tensor norm = sqrt(squared);
    // clipnorm * min(1 / norm, 1 / clipnorm), plus (norm - norm) to turn a non-finite norm into NaN.
    const Tensor scale =
        minimum(div(Scalar(1.0), norm), Scalar(1 / global_clipnorm)).mul(global_clipnorm).add(norm.sub(norm));
    for (Tensor& g : grads) g = g.mul(scale.to(g.dtype()));
  } else if (clipvalue > 0) {
    for (Tensor& g : grads) g = g.clamp(Scalar(-clipvalue), Scalar(clipvalue));
  }
}

}  // namespace

SGDOptions::operator Hyper() const {
  Hyper h = common("SGD", learning_rate_, weight_decay_, clipnorm_, clipvalue_, global_clipnorm_);
  check_unit("SGD", "momentum", momentum_, true);
  h.insert("momentum", momentum_);
  h.insert("nesterov", nesterov_);
  return h;
}

AdamOptions::operator Hyper() const {
  return adam_hyper("Adam", common("Adam", learning_rate_, weight_decay_, clipnorm_, clipvalue_, global_clipnorm_),
                    beta_1_, beta_2_, epsilon_, amsgrad_);
}

AdamWOptions::operator Hyper() const {
  return adam_hyper("AdamW", common("AdamW", learning_rate_, weight_decay_, clipnorm_, clipvalue_, global_clipnorm_),
                    beta_1_, beta_2_, epsilon_, amsgrad_);
}

RMSpropOptions::operator Hyper() const {
  Hyper h = common("RMSprop", learning_rate_, weight_decay_, clipnorm_, clipvalue_, global_clipnorm_);
  check_unit("RMSprop", "rho", rho_, false);
  check_unit("RMSprop", "momentum", momentum_, false);
  check_epsilon("RMSprop", epsilon_);
  h.insert("rho", rho_);
  h.insert("momentum", momentum_);
  h.insert("epsilon", epsilon_);
  h.insert("centered", centered_);
  return h;
}

AdagradOptions::operator Hyper() const {
  Hyper h = common("Adagrad", learning_rate_, weight_decay_, clipnorm_, clipvalue_, global_clipnorm_);
  if (!(initial_accumulator_value_ >= 0))
    fail<ValueError>("[Adagrad] initial_accumulator_value must be non-negative, got ", initial_accumulator_value_);
  check_epsilon("Adagrad", epsilon_);
  h.insert("initial_accumulator_value", initial_accumulator_value_);
  h.insert("epsilon", epsilon_);
  return h;
}

// ---- the base: building, iterations, clipping ---------------------------------------------

Optimizer::Optimizer(std::string name, Hyper defaults) : optim::Optimizer(std::move(name), {}, std::move(defaults)) {}

void Optimizer::build(std::vector<Tensor> variables) {
  if (!built()) add_param_group(ParamGroup(std::move(variables)));
}

int64_t Optimizer::iterations() const {
  // Each variable's "step" is the iteration of its last update, so the latest is the count.
  double latest = 0;
  for (const ParamGroup& g : param_groups())
    for (const Tensor& p : g.params())
      if (const TensorDict* st = find_state(p); st && st->contains("step"))
        latest = std::max(latest, st->at("step").item<double>());
  return static_cast<int64_t>(latest);
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard enable;
    loss = closure();
  }
  if (!built())
    fail<RuntimeError>("[", name(),
                       ".step] the optimizer has no variables yet: build(variables) first, or "
                       "apply_gradients(zip(grads, variables))");
  NoGradGuard no_grad;
  auto [params, grads] = params_with_grads();
  step_params(params, grads);
  return loss;
}

void Optimizer::apply_step(const std::vector<StepParam>& params, const std::vector<Tensor>& given) {
  std::vector<Tensor> grads = given;
  clip(defaults(), grads);
  // Every variable updated now is at step iterations + 1, whether or not it had a gradient
  // at every step before (Keras counts the optimizer's steps, not each variable's).
  const double iteration = static_cast<double>(iterations());
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [group, p] = params[i];
    const Hyper& options = param_groups().at(group).options();
    TensorDict& st = state(p);
    if (st.empty()) st = init_state(p, options);
    st.at("step").fill_(iteration);
    update_one(options, p, grads[i], st);
  }
}

void Optimizer::apply_gradients(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars) {
  if (!built()) {
    std::vector<Tensor> variables;
    for (const auto& [grad, var] : grads_and_vars) variables.push_back(var);
    build(std::move(variables));
  }
  optim::Optimizer::apply_gradients(grads_and_vars);
}

// ---- the rules ----------------------------------------------------------------------------

SGD::SGD(SGDOptions options) : Optimizer("SGD", options) {}

TensorDict SGD::init_state(const Tensor& param, const Hyper& h) const {
  TensorDict st{{"step", detail::zero_step()}};
  if (hyper_get<double>(h, "momentum") != 0) st.insert("momentum", zeros_as(param));
  return st;
}

void SGD::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  detail::increment_step(state);
  const double momentum = hyper_get<double>(h, "momentum");
  if (momentum != 0 && !state.contains("momentum")) state.insert("momentum", zeros_as(param));
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::KerasSgdArgs<T> a{
        param.data_ptr<T>(),           grad.data_ptr<T>(), momentum != 0 ? state.at("momentum").data_ptr<T>() : nullptr,
        hyper_get<double>(h, "lr"),    momentum,           hyper_get<double>(h, "weight_decay"),
        hyper_get<bool>(h, "nesterov")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::keras_sgd(a, b, e); });
  })
}

Adam::Adam(AdamOptions options) : Optimizer("Adam", options) {}
AdamW::AdamW(AdamWOptions options) : Adam("AdamW", options) {}

TensorDict Adam::init_state(const Tensor& param, const Hyper& h) const {
  TensorDict st{{"step", detail::zero_step()}, {"momentum", zeros_as(param)}, {"velocity", zeros_as(param)}};
  if (hyper_get<bool>(h, "amsgrad")) st.insert("velocity_hat", zeros_as(param));
  return st;
}

void Adam::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const bool amsgrad = hyper_get<bool>(h, "amsgrad");
  if (amsgrad && !state.contains("velocity_hat")) state.insert("velocity_hat", zeros_as(param));
  const double step = detail::increment_step(state);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::KerasAdamArgs<T> a{param.data_ptr<T>(),
                                      grad.data_ptr<T>(),
                                      state.at("momentum").data_ptr<T>(),
                                      state.at("velocity").data_ptr<T>(),
                                      amsgrad ? state.at("velocity_hat").data_ptr<T>() : nullptr,
                                      hyper_get<double>(h, "lr"),
                                      hyper_get<double>(h, "beta_1"),
                                      hyper_get<double>(h, "beta_2"),
                                      hyper_get<double>(h, "epsilon"),
                                      hyper_get<double>(h, "weight_decay"),
                                      step};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::keras_adam(a, b, e); });
  })
}

RMSprop::RMSprop(RMSpropOptions options) : Optimizer("RMSprop", options) {}

TensorDict RMSprop::init_state(const Tensor& param, const Hyper& h) const {
  TensorDict st{{"step", detail::zero_step()}, {"velocity", zeros_as(param)}};
  if (hyper_get<double>(h, "momentum") > 0) st.insert("momentum", zeros_as(param));
  if (hyper_get<bool>(h, "centered")) st.insert("average_gradient", zeros_as(param));
  return st;
}

void RMSprop::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  detail::increment_step(state);
  const double momentum = hyper_get<double>(h, "momentum");
  const bool centered = hyper_get<bool>(h, "centered");
  if (momentum > 0 && !state.contains("momentum")) state.insert("momentum", zeros_as(param));
  if (centered && !state.contains("average_gradient")) state.insert("average_gradient", zeros_as(param));
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::KerasRmspropArgs<T> a{param.data_ptr<T>(),
                                         grad.data_ptr<T>(),
                                         state.at("velocity").data_ptr<T>(),
                                         momentum > 0 ? state.at("momentum").data_ptr<T>() : nullptr,
                                         centered ? state.at("average_gradient").data_ptr<T>() : nullptr,
                                         hyper_get<double>(h, "lr"),
                                         hyper_get<double>(h, "rho"),
                                         momentum,
                                         hyper_get<double>(h, "epsilon"),
                                         hyper_get<double>(h, "weight_decay")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::keras_rmsprop(a, b, e); });
  })
}

Adagrad::Adagrad(AdagradOptions options) : Optimizer("Adagrad", options) {}

TensorDict Adagrad::init_state(const Tensor& param, const Hyper& h) const {
  return {{"step", detail::zero_step()},
          {"accumulator", full(param.shape(), hyper_get<double>(h, "initial_accumulator_value"),
                               Options{param.dtype(), param.device()})}};
}

void Adagrad::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  detail::increment_step(state);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::KerasAdagradArgs<T> a{param.data_ptr<T>(),
                                         grad.data_ptr<T>(),
                                         state.at("accumulator").data_ptr<T>(),
                                         hyper_get<double>(h, "lr"),
                                         hyper_get<double>(h, "epsilon"),
                                         hyper_get<double>(h, "weight_decay")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::keras_adagrad(a, b, e); });
  })
}

}  // namespace ug::optim::keras
