// Activation layers, each a module around its function, and the activations by name that
// Keras-style layers take (Dense(128, "relu")). PReLU (a learnable slope), CosineSimilarity and
// PairwiseDistance (two inputs) are modules of their own.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ug/nn/functional/activation.h"
#include "ug/nn/module.h"

namespace ug::nn {

/** The activation that Keras calls `name`, with Keras's definition ("relu", "gelu", "elu",
 *  "softplus", "leaky_relu" (slope 0.2), "hard_sigmoid", ...; "linear" or "" for none). */
std::function<Tensor(const Tensor&)> activation(const std::string& name);

/** One module class per activation: `ReLU()`, `GELU("tanh")`, `Softmax(-1)`. Those taking
 *  `inplace` write their result into the input, as torch's do. */
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

UG_ACTIVATION(ReLU, explicit ReLUImpl(bool inplace = false);)
UG_ACTIVATION(Sigmoid, SigmoidImpl();)
UG_ACTIVATION(Tanh, TanhImpl();)
UG_ACTIVATION(SiLU, explicit SiLUImpl(bool inplace = false);)
UG_ACTIVATION(GELU, explicit GELUImpl(const std::string& approximate = "none");)
UG_ACTIVATION(LeakyReLU, explicit LeakyReLUImpl(double negative_slope = 0.01, bool inplace = false);)
UG_ACTIVATION(Softmax, explicit SoftmaxImpl(int64_t dim = -1);)
UG_ACTIVATION(LogSoftmax, explicit LogSoftmaxImpl(int64_t dim = -1);)
UG_ACTIVATION(Softmax2d, Softmax2dImpl();)
UG_ACTIVATION(ReLU6, explicit ReLU6Impl(bool inplace = false);)
UG_ACTIVATION(ELU, explicit ELUImpl(double alpha = 1.0, bool inplace = false);)
UG_ACTIVATION(SELU, explicit SELUImpl(bool inplace = false);)
UG_ACTIVATION(CELU, explicit CELUImpl(double alpha = 1.0, bool inplace = false);)
UG_ACTIVATION(Mish, explicit MishImpl(bool inplace = false);)
UG_ACTIVATION(LogSigmoid, LogSigmoidImpl();)
UG_ACTIVATION(Softplus, explicit SoftplusImpl(double beta = 1.0, double threshold = 20.0);)
UG_ACTIVATION(Softsign, SoftsignImpl();)
UG_ACTIVATION(Hardtanh, explicit HardtanhImpl(double min_val = -1.0, double max_val = 1.0, bool inplace = false);)
UG_ACTIVATION(Hardsigmoid, explicit HardsigmoidImpl(bool inplace = false);)
UG_ACTIVATION(Hardswish, explicit HardswishImpl(bool inplace = false);)
UG_ACTIVATION(GLU, explicit GLUImpl(int64_t dim = -1);)
/** dim unset: torch's implicit dim (functional::implicit_softmax_dim) of each input. */
UG_ACTIVATION(Softmin, explicit SoftminImpl(std::optional<int64_t> dim = {});)
UG_ACTIVATION(Tanhshrink, TanhshrinkImpl();)
UG_ACTIVATION(Threshold, ThresholdImpl(double threshold, double value, bool inplace = false);)
UG_ACTIVATION(Hardshrink, explicit HardshrinkImpl(double lambd = 0.5);)
UG_ACTIVATION(Softshrink, explicit SoftshrinkImpl(double lambd = 0.5);)
#undef UG_ACTIVATION

/** x where x > 0, weight * x elsewhere: weight holds num_parameters slopes (1, or one per
 *  channel), each starting at init. */
class PReLUImpl : public Module {
  UG_CLONEABLE(PReLUImpl)
 public:
  explicit PReLUImpl(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& x) override { return functional::prelu(x, weight()); }
  void reset_parameters() override;
  std::string extra_repr() const override { return "num_parameters=" + std::to_string(num_parameters_); }
  Tensor& weight() { return parameter("weight"); }
  int64_t num_parameters() const { return num_parameters_; }

 private:
  int64_t num_parameters_;
  double init_;
};
UG_MODULE(PReLU);

/** forward(x1, x2): functional::cosine_similarity along dim. */
class CosineSimilarityImpl : public Module {
  UG_CLONEABLE(CosineSimilarityImpl)
 public:
  explicit CosineSimilarityImpl(int64_t dim = 1, double eps = 1e-8)
      : Module("CosineSimilarity"), dim_(dim), eps_(eps) {}
  Tensor forward(const Tensor& x1, const Tensor& x2) { return functional::cosine_similarity(x1, x2, dim_, eps_); }

 private:
  int64_t dim_;
  double eps_;
};
UG_MODULE(CosineSimilarity);

/** forward(x1, x2): functional::pairwise_distance, the p-norm of x1 - x2 + eps along the last dim. */
class PairwiseDistanceImpl : public Module {
  UG_CLONEABLE(PairwiseDistanceImpl)
 public:
  explicit PairwiseDistanceImpl(double p = 2.0, double eps = 1e-6, bool keepdim = false)
      : Module("PairwiseDistance"), p_(p), eps_(eps), keepdim_(keepdim) {}
  Tensor forward(const Tensor& x1, const Tensor& x2) {
    return functional::pairwise_distance(x1, x2, p_, eps_, keepdim_);
  }

 private:
  double p_, eps_;
  bool keepdim_;
};
UG_MODULE(PairwiseDistance);

/** Leaky ReLU with slopes drawn from U(lower, upper) in training, their mean in evaluation. */
class RReLUImpl : public Module {
  UG_CLONEABLE(RReLUImpl)
 public:
  explicit RReLUImpl(double lower = 1.0 / 8, double upper = 1.0 / 3, bool inplace = false)
      : Module("RReLU"), lower_(lower), upper_(upper), inplace_(inplace) {}
  Tensor forward(const Tensor& x) override { return functional::rrelu(x, lower_, upper_, is_training(), inplace_); }
  std::string extra_repr() const override;

 private:
  double lower_, upper_;
  bool inplace_;
};
UG_MODULE(RReLU);

}  // namespace ug::nn
