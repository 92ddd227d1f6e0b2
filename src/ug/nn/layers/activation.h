// Activation layers, each a module around its function, and the activations by name that
// Keras-style layers take (Dense(128, "relu")).
#pragma once

#include <functional>
#include <string>

#include "ug/nn/module.h"

namespace ug::nn {

/** The activation called `name` ("relu", "gelu", "tanh", "sigmoid", "softmax", "silu"/"swish",
 *  "leaky_relu", "elu", "softplus", "log_softmax", "linear" or "" for none). */
std::function<Tensor(const Tensor&)> activation(const std::string& name);

/** One module class per activation: `ReLU()`, `GELU("tanh")`, `Softmax(-1)`. */
class ActivationImpl : public Module {
  UG_CLONEABLE(ActivationImpl)
 public:
  ActivationImpl(std::string type_name, std::function<Tensor(const Tensor&)> fn, std::string repr = "")
      : Module(std::move(type_name)), fn_(std::move(fn)), repr_(std::move(repr)) {}
  Tensor forward(const Tensor& x) override { return fn_(x); }
  std::string extra_repr() const override { return repr_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string repr_;
};

#define UG_ACTIVATION(Name, Ctor)            \
  class Name##Impl : public ActivationImpl { \
    UG_CLONEABLE(Name##Impl)                 \
    Ctor                                     \
  };                                         \
  UG_MODULE(Name);

UG_ACTIVATION(ReLU, ReLUImpl();)
UG_ACTIVATION(Sigmoid, SigmoidImpl();)
UG_ACTIVATION(Tanh, TanhImpl();)
UG_ACTIVATION(SiLU, SiLUImpl();)
UG_ACTIVATION(GELU, explicit GELUImpl(const std::string& approximate = "none");)
UG_ACTIVATION(LeakyReLU, explicit LeakyReLUImpl(double negative_slope = 0.01);)
UG_ACTIVATION(Softmax, explicit SoftmaxImpl(int64_t dim = -1);)
UG_ACTIVATION(LogSoftmax, explicit LogSoftmaxImpl(int64_t dim = -1);)
#undef UG_ACTIVATION

}  // namespace ug::nn
