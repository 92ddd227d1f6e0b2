#include "ug/optim/asgd.h"

#include <algorithm>
#include <cmath>

#include "ug/optim/kernels.h"

namespace ug::optim {
namespace {

/** A one-number state entry (eta, mu): torch keeps them in the step counter's dtype, and in the
 *  parameter's after load_state_dict. */
double read_scalar(const Tensor& t) {
  return t.dtype() == DType::Float64 ? *t.data_ptr<double>() : double(*t.data_ptr<float>());
}

void write_scalar(const Tensor& t, double v) {
  if (t.dtype() == DType::Float64) *t.data_ptr<double>() = v;
  else *t.data_ptr<float>() = static_cast<float>(v);
}

}  // namespace

ASGDOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[ASGD] Invalid learning rate: ", lr_);
  if (weight_decay_ < 0) fail<ValueError>("[ASGD] Invalid weight_decay value: ", weight_decay_);
  return {{"lr", lr_},
          {"lambd", lambd_},
          {"alpha", alpha_},
          {"t0", t0_},
          {"weight_decay", weight_decay_},
          {"maximize", maximize_}};
}

ASGD::ASGD(std::vector<Tensor> params, ASGDOptions options)
    : ASGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

ASGD::ASGD(std::vector<ParamGroup> groups, ASGDOptions defaults) : Optimizer("ASGD", std::move(groups), defaults) {}

TensorDict ASGD::init_state(const Tensor& param, const Hyper& h) const {
  Tensor eta = detail::zero_step(), mu = detail::zero_step();
  eta.fill_(hyper_get<double>(h, "lr"));
  mu.fill_(1.0);
  return {{"step", detail::zero_step()},
          {"eta", eta},
          {"mu", mu},
          {"ax", zeros(param.shape(), Options{param.dtype(), param.device()})}};
}

void ASGD::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double step = detail::increment_step(state);
  const double lr = hyper_get<double>(h, "lr"), lambd = hyper_get<double>(h, "lambd");
  const Tensor &eta_t = state.at("eta"), &mu_t = state.at("mu");
  const double eta = read_scalar(eta_t), mu = read_scalar(mu_t);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::AsgdArgs<T> a{param.data_ptr<T>(),
                                 grad.data_ptr<T>(),
                                 state.at("ax").data_ptr<T>(),
                                 eta,
                                 lambd,
                                 mu,
                                 hyper_get<double>(h, "weight_decay"),
                                 hyper_get<bool>(h, "maximize")};
    detail::for_chunks(param.numel(), [&](int64_t b, int64_t e) { kernels::asgd(a, b, e); });
  })
  // The next step's eta and mu, computed in double and stored rounded, as torch's.
  write_scalar(eta_t, lr / std::pow(1 + lambd * lr * step, hyper_get<double>(h, "alpha")));
  write_scalar(mu_t, 1 / std::max(1.0, step - hyper_get<double>(h, "t0")));
}

}  // namespace ug::optim
