#include "ug/nn/layers/activation.h"

#include "ug/ops/binary.h"

namespace ug::nn {

namespace {
Tensor leaky_relu(const Tensor& x, double slope) { return where(x > 0, x, x * slope); }
}  // namespace

std::function<Tensor(const Tensor&)> activation(const std::string& name) {
  if (name.empty() || name == "linear") return {};
  if (name == "relu") return [](const Tensor& x) { return x.relu(); };
  if (name == "sigmoid") return [](const Tensor& x) { return x.sigmoid(); };
  if (name == "tanh") return [](const Tensor& x) { return x.tanh(); };
  if (name == "silu" || name == "swish") return [](const Tensor& x) { return x.silu(); };
  if (name == "gelu") return [](const Tensor& x) { return x.gelu(); };
  if (name == "softmax") return [](const Tensor& x) { return x.softmax(-1); };
  if (name == "log_softmax") return [](const Tensor& x) { return x.log_softmax(-1); };
  if (name == "leaky_relu") return [](const Tensor& x) { return leaky_relu(x, 0.01); };
  fail("[activation] unknown activation \"", name,
       "\"; expected one of relu, sigmoid, tanh, silu, swish, gelu, softmax, log_softmax, leaky_relu, linear");
}

ReLUImpl::ReLUImpl() : ActivationImpl("ReLU", [](const Tensor& x) { return x.relu(); }) {}
SigmoidImpl::SigmoidImpl() : ActivationImpl("Sigmoid", [](const Tensor& x) { return x.sigmoid(); }) {}
TanhImpl::TanhImpl() : ActivationImpl("Tanh", [](const Tensor& x) { return x.tanh(); }) {}
SiLUImpl::SiLUImpl() : ActivationImpl("SiLU", [](const Tensor& x) { return x.silu(); }) {}
GELUImpl::GELUImpl(const std::string& approximate)
    : ActivationImpl(
          "GELU", [approximate](const Tensor& x) { return x.gelu(approximate); },
          approximate == "none" ? "" : "approximate='" + approximate + "'") {
  if (approximate != "none" && approximate != "tanh")
    fail("[GELU] approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
}
LeakyReLUImpl::LeakyReLUImpl(double slope)
    : ActivationImpl(
          "LeakyReLU", [slope](const Tensor& x) { return leaky_relu(x, slope); },
          "negative_slope=" + std::to_string(slope)) {}
SoftmaxImpl::SoftmaxImpl(int64_t dim)
    : ActivationImpl(
          "Softmax", [dim](const Tensor& x) { return x.softmax(dim); }, "dim=" + std::to_string(dim)) {}
LogSoftmaxImpl::LogSoftmaxImpl(int64_t dim)
    : ActivationImpl(
          "LogSoftmax", [dim](const Tensor& x) { return x.log_softmax(dim); }, "dim=" + std::to_string(dim)) {}

}  // namespace ug::nn
