#include "ug/optim/adafactor.h"

#include <cmath>
#include <limits>

#include "ug/optim/kernels.h"

namespace ug::optim {

AdafactorOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[Adafactor] Learning rate should be >= 0 but is: ", lr_);
  if (beta2_decay_ > 0) fail<ValueError>("[Adafactor] beta2_decay should be <= 0 but is: ", beta2_decay_);
  if (eps_.first < 0) fail<ValueError>("[Adafactor] epsilon1 should be >= 0 but is: ", eps_.first);
  if (!(eps_.second >= 0)) fail<ValueError>("[Adafactor] epsilon2 should be >= 0 but is: ", eps_.second);
  if (!(d_ >= 1)) fail<ValueError>("[Adafactor] Clipping threshold d should be >= 1 but is: ", d_);
  if (weight_decay_ < 0) fail<ValueError>("[Adafactor] weight_decay should be >= 0 but is: ", weight_decay_);
  return {{"lr", lr_}, {"beta2_decay", beta2_decay_},   {"eps", eps_},
          {"d", d_},   {"weight_decay", weight_decay_}, {"maximize", maximize_}};
}

Adafactor::Adafactor(std::vector<Tensor> params, AdafactorOptions options)
    : Adafactor(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adafactor::Adafactor(std::vector<ParamGroup> groups, AdafactorOptions defaults)
    : Optimizer("Adafactor", std::move(groups), defaults) {}

TensorDict Adafactor::init_state(const Tensor& param, const Hyper&) const {
  const Options like{param.dtype(), param.device()};
  if (param.dim() <= 1) return {{"step", detail::zero_step()}, {"variance", zeros(param.shape(), like)}};
  Dims row = param.shape(), col = param.shape();
  row[row.size() - 1] = 1;
  col[col.size() - 2] = 1;
  return {{"step", detail::zero_step()}, {"row_var", zeros(row, like)}, {"col_var", zeros(col, like)}};
}

void Adafactor::update_param(const Hyper& h, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  const double step = detail::increment_step(state);
  const double lr = hyper_get<double>(h, "lr");
  const auto [eps1, eps2] = hyper_get<Betas>(h, "eps");
  const bool factored = param.dim() > 1;
  int64_t rows = 1, cols = 1;
  if (factored) rows = param.shape()[param.dim() - 2], cols = param.shape()[param.dim() - 1];
  const int64_t batch = param.numel() / std::max<int64_t>(rows * cols, 1);
  UG_OPTIM_DISPATCH(param.dtype(), T, {
    const kernels::AdafactorArgs<T> a{param.data_ptr<T>(),
                                      grad.data_ptr<T>(),
                                      factored ? state.at("row_var").data_ptr<T>() : nullptr,
                                      factored ? state.at("col_var").data_ptr<T>() : nullptr,
                                      factored ? nullptr : state.at("variance").data_ptr<T>(),
                                      param.numel(),
                                      batch,
                                      rows,
                                      cols,
                                      lr,
                                      hyper_get<double>(h, "weight_decay"),
                                      std::pow(step, hyper_get<double>(h, "beta2_decay")),
                                      std::min(lr, 1 / std::pow(step, 0.5)),
                                      std::isnan(eps1) ? double(std::numeric_limits<T>::epsilon()) : eps1,
                                      eps2,
                                      hyper_get<double>(h, "d"),
                                      hyper_get<bool>(h, "maximize")};
    kernels::adafactor(a);
  })
}

}  // namespace ug::optim
