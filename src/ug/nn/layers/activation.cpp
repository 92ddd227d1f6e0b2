#include "ug/nn/layers/activation.h"

#include <string_view>
#include <utility>
#include <vector>

#include "ug/core/python_repr.h"
#include "ug/nn/init.h"

namespace ug::nn {

namespace F = functional;
using Fn = std::function<Tensor(const Tensor&)>;

namespace {

/** Keras's activations (keras.activations) that exist here, with Keras's arguments. */
const std::vector<std::pair<std::string_view, Fn>>& keras_activations() {
  static const std::vector<std::pair<std::string_view, Fn>> table = {
      {"relu", [](const Tensor& x) { return F::relu(x); }},
      {"sigmoid", [](const Tensor& x) { return F::sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return F::tanh(x); }},
      {"silu", [](const Tensor& x) { return F::silu(x); }},
      {"swish", [](const Tensor& x) { return F::silu(x); }},
      {"gelu", [](const Tensor& x) { return F::gelu(x); }},
      {"softmax", [](const Tensor& x) { return F::softmax(x, -1); }},
      {"log_softmax", [](const Tensor& x) { return F::log_softmax(x, -1); }},
      {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, 0.2); }},
      {"elu", [](const Tensor& x) { return F::elu(x); }},
      {"selu", [](const Tensor& x) { return F::selu(x); }},
      {"celu", [](const Tensor& x) { return F::celu(x); }},
      {"softplus", [](const Tensor& x) { return F::softplus(x); }},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }},
      {"exponential", [](const Tensor& x) { return x.exp(); }},
      {"relu6", [](const Tensor& x) { return F::relu6(x); }},
      {"mish", [](const Tensor& x) { return F::mish(x); }},
      {"log_sigmoid", [](const Tensor& x) { return F::logsigmoid(x); }},
      {"hard_sigmoid", [](const Tensor& x) { return F::hardsigmoid(x); }},
      {"hard_silu", [](const Tensor& x) { return F::hardswish(x); }},
      {"hard_swish", [](const Tensor& x) { return F::hardswish(x); }},
      {"hard_tanh", [](const Tensor& x) { return F::hardtanh(x); }},
      {"glu", [](const Tensor& x) { return F::glu(x, -1); }},
      {"hard_shrink", [](const Tensor& x) { return F::hardshrink(x, 0.5); }},
      {"soft_shrink", [](const Tensor& x) { return F::softshrink(x, 0.5); }},
      {"tanh_shrink", [](const Tensor& x) { return F::tanhshrink(x); }},
  };
  return table;
}

/** torch's printout of `inplace`, shown only when set. */
std::string with_inplace(std::string repr, bool inplace) {
  if (!inplace) return repr;
  return repr.empty() ? "inplace=True" : repr + ", inplace=True";
}

}  // namespace

Fn activation(const std::string& name) {
  if (name.empty() || name == "linear") return {};
  std::string names;
  for (const auto& [n, fn] : keras_activations()) {
    if (n == name) return fn;
    names += std::string(n) + ", ";
  }
  fail("[activation] unknown activation \"", name, "\"; expected one of ", names, "linear");
}

ReLUImpl::ReLUImpl(bool inplace)
    : ActivationImpl(
          "ReLU", [inplace](const Tensor& x) { return F::relu(x, inplace); }, with_inplace("", inplace)) {}
SigmoidImpl::SigmoidImpl() : ActivationImpl("Sigmoid", [](const Tensor& x) { return x.sigmoid(); }) {}
TanhImpl::TanhImpl() : ActivationImpl("Tanh", [](const Tensor& x) { return x.tanh(); }) {}
SiLUImpl::SiLUImpl(bool inplace)
    : ActivationImpl(
          "SiLU", [inplace](const Tensor& x) { return F::silu(x, inplace); }, with_inplace("", inplace)) {}
GELUImpl::GELUImpl(const std::string& approximate)
    : ActivationImpl(
          "GELU", [approximate](const Tensor& x) { return x.gelu(approximate); },
          approximate == "none" ? "" : "approximate='" + approximate + "'") {
  if (approximate != "none" && approximate != "tanh")
    fail("[GELU] approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
}
LeakyReLUImpl::LeakyReLUImpl(double slope, bool inplace)
    : ActivationImpl(
          "LeakyReLU", [slope, inplace](const Tensor& x) { return F::leaky_relu(x, slope, inplace); },
          with_inplace("negative_slope=" + python_repr(slope), inplace)) {}
SoftmaxImpl::SoftmaxImpl(int64_t dim)
    : ActivationImpl(
          "Softmax", [dim](const Tensor& x) { return x.softmax(dim); }, "dim=" + std::to_string(dim)) {}
Softmax2dImpl::Softmax2dImpl()
    : ActivationImpl("Softmax2d", [](const Tensor& x) {
        if (x.dim() != 3 && x.dim() != 4)
          fail("[Softmax2d] expected input to be 3D or 4D, got ", x.dim(), "D (shape ", x.shape(), ")");
        return x.softmax(-3);
      }) {}
LogSoftmaxImpl::LogSoftmaxImpl(int64_t dim)
    : ActivationImpl(
          "LogSoftmax", [dim](const Tensor& x) { return x.log_softmax(dim); }, "dim=" + std::to_string(dim)) {}

ReLU6Impl::ReLU6Impl(bool inplace)
    : ActivationImpl(
          "ReLU6", [inplace](const Tensor& x) { return F::relu6(x, inplace); }, with_inplace("", inplace)) {}
ELUImpl::ELUImpl(double alpha, bool inplace)
    : ActivationImpl(
          "ELU", [alpha, inplace](const Tensor& x) { return F::elu(x, alpha, inplace); },
          with_inplace("alpha=" + python_repr(alpha), inplace)) {}
SELUImpl::SELUImpl(bool inplace)
    : ActivationImpl(
          "SELU", [inplace](const Tensor& x) { return F::selu(x, inplace); }, with_inplace("", inplace)) {}
CELUImpl::CELUImpl(double alpha, bool inplace)
    : ActivationImpl(
          "CELU", [alpha, inplace](const Tensor& x) { return F::celu(x, alpha, inplace); },
          with_inplace("alpha=" + python_repr(alpha), inplace)) {
  if (alpha == 0) fail("[CELU] alpha cannot be 0");
}
MishImpl::MishImpl(bool inplace)
    : ActivationImpl(
          "Mish", [inplace](const Tensor& x) { return F::mish(x, inplace); }, with_inplace("", inplace)) {}
LogSigmoidImpl::LogSigmoidImpl() : ActivationImpl("LogSigmoid", [](const Tensor& x) { return F::logsigmoid(x); }) {}
SoftplusImpl::SoftplusImpl(double beta, double threshold)
    : ActivationImpl(
          "Softplus", [beta, threshold](const Tensor& x) { return F::softplus(x, beta, threshold); },
          "beta=" + python_repr(beta) + ", threshold=" + python_repr(threshold)) {}
SoftsignImpl::SoftsignImpl() : ActivationImpl("Softsign", [](const Tensor& x) { return F::softsign(x); }) {}
HardtanhImpl::HardtanhImpl(double min_val, double max_val, bool inplace)
    : ActivationImpl(
          "Hardtanh", [=](const Tensor& x) { return F::hardtanh(x, min_val, max_val, inplace); },
          with_inplace("min_val=" + python_repr(min_val) + ", max_val=" + python_repr(max_val), inplace)) {
  if (!(max_val > min_val))
    fail("[Hardtanh] max_val (", python_repr(max_val), ") must be greater than min_val (", python_repr(min_val), ")");
}
// torch prints neither Hardsigmoid's nor Hardswish's inplace.
HardsigmoidImpl::HardsigmoidImpl(bool inplace)
    : ActivationImpl("Hardsigmoid", [inplace](const Tensor& x) { return F::hardsigmoid(x, inplace); }) {}
HardswishImpl::HardswishImpl(bool inplace)
    : ActivationImpl("Hardswish", [inplace](const Tensor& x) { return F::hardswish(x, inplace); }) {}
GLUImpl::GLUImpl(int64_t dim)
    : ActivationImpl(
          "GLU", [dim](const Tensor& x) { return F::glu(x, dim); }, "dim=" + std::to_string(dim)) {}
SoftminImpl::SoftminImpl(std::optional<int64_t> dim)
    : ActivationImpl(
          "Softmin", [dim](const Tensor& x) { return F::softmin(x, dim ? *dim : F::implicit_softmax_dim(x)); },
          "dim=" + (dim ? std::to_string(*dim) : "None")) {}
TanhshrinkImpl::TanhshrinkImpl() : ActivationImpl("Tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }) {}
ThresholdImpl::ThresholdImpl(double threshold, double value, bool inplace)
    : ActivationImpl(
          "Threshold", [=](const Tensor& x) { return F::threshold(x, threshold, value, inplace); },
          with_inplace("threshold=" + python_repr(threshold) + ", value=" + python_repr(value), inplace)) {}
HardshrinkImpl::HardshrinkImpl(double lambd)
    : ActivationImpl(
          "Hardshrink", [lambd](const Tensor& x) { return F::hardshrink(x, lambd); }, python_repr(lambd)) {}
SoftshrinkImpl::SoftshrinkImpl(double lambd)
    : ActivationImpl(
          "Softshrink", [lambd](const Tensor& x) { return F::softshrink(x, lambd); }, python_repr(lambd)) {
  if (!(lambd >= 0)) fail("[Softshrink] lambd must be >= 0, got ", python_repr(lambd));
}

PReLUImpl::PReLUImpl(int64_t num_parameters, double init)
    : Module("PReLU"), num_parameters_(num_parameters), init_(init) {
  if (num_parameters < 1) fail("[PReLU] num_parameters must be positive, got ", num_parameters);
  register_parameter("weight", empty({num_parameters}));
  reset_parameters();
}

void PReLUImpl::reset_parameters() { init::constant_(weight(), init_); }

std::string RReLUImpl::extra_repr() const {
  return "lower=" + python_repr(lower_) + ", upper=" + python_repr(upper_) + (inplace_ ? ", inplace=True" : "");
}

}  // namespace ug::nn
