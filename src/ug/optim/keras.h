// ug::optim::keras: Keras's optimizers (keras.optimizers.SGD, Adam, AdamW, RMSprop, Adagrad)
// with Keras's own defaults and update rules; model.compile(optimizer="adam") builds these.
// They differ from torch.optim's in more than names: Keras's epsilon is 1e-7, Adam adds it
// to sqrt(v) before the bias correction (torch after), RMSprop and Adagrad add it under the
// square root, RMSprop's rho is 0.9, SGD's momentum buffer has the learning rate in it,
// Adagrad's accumulator starts at 0.1, and weight_decay is always decoupled (var -= var *
// weight_decay * lr before each step; AdamW is Adam with weight_decay 0.004).
//
// As in Keras, an optimizer is made without variables: build(), the first apply_gradients
// or compile's first step gives them. One iteration count (iterations()) serves every
// variable, and clipnorm, clipvalue or global_clipnorm clip the gradients of step and
// apply_gradients first (the functional update leaves its gradients as they are).
#pragma once

#include <optional>

#include "ug/optim/optimizer.h"

namespace ug::optim::keras {

/** The clipping every Keras optimizer takes, at most one of them: each gradient's norm, each
 *  element, or the joint norm of all gradients. */
#define UG_KERAS_CLIP_ARGS                        \
  UG_OPTIM_ARG(std::optional<double>, clipnorm);  \
  UG_OPTIM_ARG(std::optional<double>, clipvalue); \
  UG_OPTIM_ARG(std::optional<double>, global_clipnorm)

struct SGDOptions {
  SGDOptions(double learning_rate = 0.01) : learning_rate_(learning_rate) {}
  UG_OPTIM_ARG(double, learning_rate);
  UG_OPTIM_ARG(double, momentum) = 0;
  UG_OPTIM_ARG(bool, nesterov) = false;
  UG_OPTIM_ARG(std::optional<double>, weight_decay);
  UG_KERAS_CLIP_ARGS;

 public:
  operator Hyper() const;
};

struct AdamOptions {
  AdamOptions(double learning_rate = 1e-3) : learning_rate_(learning_rate) {}
  UG_OPTIM_ARG(double, learning_rate);
  UG_OPTIM_ARG(double, beta_1) = 0.9;
  UG_OPTIM_ARG(double, beta_2) = 0.999;
  UG_OPTIM_ARG(double, epsilon) = 1e-7;
  UG_OPTIM_ARG(bool, amsgrad) = false;
  UG_OPTIM_ARG(std::optional<double>, weight_decay);
  UG_KERAS_CLIP_ARGS;

 public:
  operator Hyper() const;
};

/** Adam's options with weight_decay 0.004, Keras's AdamW default. */
struct AdamWOptions {
  AdamWOptions(double learning_rate = 1e-3) : learning_rate_(learning_rate) {}
  UG_OPTIM_ARG(double, learning_rate);
  UG_OPTIM_ARG(double, weight_decay) = 0.004;
  UG_OPTIM_ARG(double, beta_1) = 0.9;
  UG_OPTIM_ARG(double, beta_2) = 0.999;
  UG_OPTIM_ARG(double, epsilon) = 1e-7;
  UG_OPTIM_ARG(bool, amsgrad) = false;
  UG_KERAS_CLIP_ARGS;

 public:
  operator Hyper() const;
};

struct RMSpropOptions {
  RMSpropOptions(double learning_rate = 1e-3) : learning_rate_(learning_rate) {}
  UG_OPTIM_ARG(double, learning_rate);
  UG_OPTIM_ARG(double, rho) = 0.9;
  UG_OPTIM_ARG(double, momentum) = 0;
  UG_OPTIM_ARG(double, epsilon) = 1e-7;
  UG_OPTIM_ARG(bool, centered) = false;
  UG_OPTIM_ARG(std::optional<double>, weight_decay);
  UG_KERAS_CLIP_ARGS;

 public:
  operator Hyper() const;
};

struct AdagradOptions {
  AdagradOptions(double learning_rate = 1e-3) : learning_rate_(learning_rate) {}
  UG_OPTIM_ARG(double, learning_rate);
  UG_OPTIM_ARG(double, initial_accumulator_value) = 0.1;
  UG_OPTIM_ARG(double, epsilon) = 1e-7;
  UG_OPTIM_ARG(std::optional<double>, weight_decay);
  UG_KERAS_CLIP_ARGS;

 public:
  operator Hyper() const;
};

#undef UG_KERAS_CLIP_ARGS

/** keras.optimizers.Optimizer: the variables come after construction, one iteration count
 *  for all of them, Keras's gradient clipping. The learning rate is the group's "lr", so
 *  schedulers and callbacks set it as for any optimizer. */
class Optimizer : public optim::Optimizer {
 public:
  /** Keras's build(var_list): the variables to update, taken once (later calls do nothing). */
  void build(std::vector<Tensor> variables);
  bool built() const { return !param_groups().empty(); }
  /** The steps taken so far (Keras's optimizer.iterations). */
  int64_t iterations() const;

  /** Clips the gradients, then updates every variable that has one, at step iterations() + 1. */
  Tensor step(const LossClosure& closure = nullptr) override;
  /** Builds on the given variables first when not built yet, as Keras does. */
  void apply_gradients(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars) override;

 protected:
  Optimizer(std::string name, Hyper defaults);
  /** Clips the gradients as a whole, then updates each variable at step iterations() + 1. */
  void apply_step(const std::vector<StepParam>& params, const std::vector<Tensor>& grads) override;
};

class SGD : public Optimizer {
 public:
  explicit SGD(SGDOptions options = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});

 protected:
  Adam(std::string name, Hyper defaults) : Optimizer(std::move(name), std::move(defaults)) {}
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

class AdamW : public Adam {
 public:
  explicit AdamW(AdamWOptions options = {});
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(RMSpropOptions options = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim::keras
