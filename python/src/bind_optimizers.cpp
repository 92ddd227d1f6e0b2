// ug.optimizers: Keras's optimizers (keras.optimizers) with Keras's arguments and defaults, on
// ug::optim::keras. They are ug.optim optimizers too (state_dict, param_groups, schedulers),
// made without variables: build(var_list), the first apply_gradients or model.fit gives them.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/optim/keras.h"
#include "ug/optim/loss_scale_optimizer.h"

namespace ugpy {

using namespace nb::literals;

namespace {

namespace keras = ug::optim::keras;
using ug::Tensor;

std::vector<Tensor> variables_from_python(nb::handle var_list) {
  std::vector<Tensor> out;
  for (nb::handle v : nb::iter(var_list)) {
    if (!nb::isinstance<Tensor>(v))
      ug::fail<ug::TypeError>("[build] var_list must hold Tensors, got ", nb::inst_name(v).c_str());
    out.push_back(nb::cast<Tensor>(v));
  }
  return out;
}

double learning_rate(const keras::Optimizer& opt) {
  return opt.built() ? opt.param_groups().front().lr() : ug::optim::hyper_get<double>(opt.defaults(), "lr");
}

void set_learning_rate(keras::Optimizer& opt, double lr) {
  if (!(lr >= 0)) ug::fail<ug::ValueError>("[", opt.name(), "] learning_rate must be non-negative, got ", lr);
  opt.defaults().insert("lr", lr);
  for (ug::optim::ParamGroup& g : opt.param_groups()) g.lr() = lr;
}

}  // namespace

void bind_optimizers(nb::module_& m) {
  nb::class_<keras::Optimizer, ug::optim::Optimizer>(
      m, "Optimizer", "keras.optimizers.Optimizer: made without variables, built on those of its first step.")
      .def(
          "build", [](keras::Optimizer& opt, nb::handle var_list) { opt.build(variables_from_python(var_list)); },
          "var_list"_a, "The variables to update (Keras's build); once built, later calls do nothing.")
      .def_prop_ro("built", &keras::Optimizer::built)
      .def_prop_ro("iterations", &keras::Optimizer::iterations, "The steps taken so far.")
      .def_prop_rw("learning_rate", &learning_rate, &set_learning_rate,
                   "The learning rate (the group's lr, which schedulers set too).");

  // The defaults are the C++ option structs' (Keras's own).
  const keras::SGDOptions sgd;
  const keras::AdamOptions adam;
  const keras::AdamWOptions adamw;
  const keras::RMSpropOptions rmsprop;
  const keras::AdagradOptions adagrad;
  nb::class_<keras::SGD, keras::Optimizer>(m, "SGD", "keras.optimizers.SGD: momentum (lr inside the buffer), Nesterov.")
      .def(
          "__init__",
          [](keras::SGD* self, double learning_rate, double momentum, bool nesterov, std::optional<double> weight_decay,
             std::optional<double> clipnorm, std::optional<double> clipvalue, std::optional<double> global_clipnorm) {
            new (self) keras::SGD(keras::SGDOptions(learning_rate)
                                      .momentum(momentum)
                                      .nesterov(nesterov)
                                      .weight_decay(weight_decay)
                                      .clipnorm(clipnorm)
                                      .clipvalue(clipvalue)
                                      .global_clipnorm(global_clipnorm));
          },
          "learning_rate"_a = sgd.learning_rate(), "momentum"_a = sgd.momentum(), "nesterov"_a = sgd.nesterov(),
          "weight_decay"_a = nb::none(), "clipnorm"_a = nb::none(), "clipvalue"_a = nb::none(),
          "global_clipnorm"_a = nb::none());

  nb::class_<keras::Adam, keras::Optimizer>(m, "Adam",
                                            "keras.optimizers.Adam: epsilon 1e-7, added to sqrt(v) before the bias "
                                            "correction (torch.optim.Adam adds 1e-8 after it).")
      .def(
          "__init__",
          [](keras::Adam* self, double learning_rate, double beta_1, double beta_2, double epsilon, bool amsgrad,
             std::optional<double> weight_decay, std::optional<double> clipnorm, std::optional<double> clipvalue,
             std::optional<double> global_clipnorm) {
            new (self) keras::Adam(keras::AdamOptions(learning_rate)
                                       .beta_1(beta_1)
                                       .beta_2(beta_2)
                                       .epsilon(epsilon)
                                       .amsgrad(amsgrad)
                                       .weight_decay(weight_decay)
                                       .clipnorm(clipnorm)
                                       .clipvalue(clipvalue)
                                       .global_clipnorm(global_clipnorm));
          },
          "learning_rate"_a = adam.learning_rate(), "beta_1"_a = adam.beta_1(), "beta_2"_a = adam.beta_2(),
          "epsilon"_a = adam.epsilon(), "amsgrad"_a = adam.amsgrad(), "weight_decay"_a = nb::none(),
          "clipnorm"_a = nb::none(), "clipvalue"_a = nb::none(), "global_clipnorm"_a = nb::none());

  nb::class_<keras::AdamW, keras::Adam>(m, "AdamW", "keras.optimizers.AdamW: Adam with weight_decay 0.004.")
      .def(
          "__init__",
          [](keras::AdamW* self, double learning_rate, double weight_decay, double beta_1, double beta_2,
             double epsilon, bool amsgrad, std::optional<double> clipnorm, std::optional<double> clipvalue,
             std::optional<double> global_clipnorm) {
            new (self) keras::AdamW(keras::AdamWOptions(learning_rate)
                                        .weight_decay(weight_decay)
                                        .beta_1(beta_1)
                                        .beta_2(beta_2)
                                        .epsilon(epsilon)
                                        .amsgrad(amsgrad)
                                        .clipnorm(clipnorm)
                                        .clipvalue(clipvalue)
                                        .global_clipnorm(global_clipnorm));
          },
          "learning_rate"_a = adamw.learning_rate(), "weight_decay"_a = adamw.weight_decay(),
          "beta_1"_a = adamw.beta_1(), "beta_2"_a = adamw.beta_2(), "epsilon"_a = adamw.epsilon(),
          "amsgrad"_a = adamw.amsgrad(), "clipnorm"_a = nb::none(), "clipvalue"_a = nb::none(),
          "global_clipnorm"_a = nb::none());

  nb::class_<keras::RMSprop, keras::Optimizer>(m, "RMSprop",
                                               "keras.optimizers.RMSprop: rho 0.9, epsilon 1e-7 under the square root.")
      .def(
          "__init__",
          [](keras::RMSprop* self, double learning_rate, double rho, double momentum, double epsilon, bool centered,
             std::optional<double> weight_decay, std::optional<double> clipnorm, std::optional<double> clipvalue,
             std::optional<double> global_clipnorm) {
            new (self) keras::RMSprop(keras::RMSpropOptions(learning_rate)
                                          .rho(rho)
                                          .momentum(momentum)
                                          .epsilon(epsilon)
                                          .centered(centered)
                                          .weight_decay(weight_decay)
                                          .clipnorm(clipnorm)
                                          .clipvalue(clipvalue)
                                          .global_clipnorm(global_clipnorm));
          },
          "learning_rate"_a = rmsprop.learning_rate(), "rho"_a = rmsprop.rho(), "momentum"_a = rmsprop.momentum(),
          "epsilon"_a = rmsprop.epsilon(), "centered"_a = rmsprop.centered(), "weight_decay"_a = nb::none(),
          "clipnorm"_a = nb::none(), "clipvalue"_a = nb::none(), "global_clipnorm"_a = nb::none());

  nb::class_<keras::Adagrad, keras::Optimizer>(
      m, "Adagrad", "keras.optimizers.Adagrad: the accumulator starts at 0.1, epsilon 1e-7 under the square root.")
      .def(
          "__init__",
          [](keras::Adagrad* self, double learning_rate, double initial_accumulator_value, double epsilon,
             std::optional<double> weight_decay, std::optional<double> clipnorm, std::optional<double> clipvalue,
             std::optional<double> global_clipnorm) {
            new (self) keras::Adagrad(keras::AdagradOptions(learning_rate)
                                          .initial_accumulator_value(initial_accumulator_value)
                                          .epsilon(epsilon)
                                          .weight_decay(weight_decay)
                                          .clipnorm(clipnorm)
                                          .clipvalue(clipvalue)
                                          .global_clipnorm(global_clipnorm));
          },
          "learning_rate"_a = adagrad.learning_rate(),
          "initial_accumulator_value"_a = adagrad.initial_accumulator_value(), "epsilon"_a = adagrad.epsilon(),
          "weight_decay"_a = nb::none(), "clipnorm"_a = nb::none(), "clipvalue"_a = nb::none(),
          "global_clipnorm"_a = nb::none());

  nb::class_<keras::LossScaleOptimizer>(
      m, "LossScaleOptimizer",
      "keras.optimizers.LossScaleOptimizer (Keras 3): scale_loss(loss) before the gradient, apply_gradients of the "
      "scaled gradients: unscaled, or the step skipped and the scale halved where one holds inf or NaN; the scale "
      "doubles after dynamic_growth_steps finite steps.")
      .def(
          "__init__",
          [](keras::LossScaleOptimizer* self, std::shared_ptr<keras::Optimizer> inner, double initial_scale,
             int64_t dynamic_growth_steps, nb::handle, bool dynamic) {
            if (!dynamic)
              ug::fail<ug::ValueError>(
                  "[LossScaleOptimizer] dynamic=False is not supported (as in Keras 3): scale the loss by a "
                  "constant yourself instead");
            new (self) keras::LossScaleOptimizer(std::move(inner), initial_scale, dynamic_growth_steps);
          },
          "inner_optimizer"_a, "initial_scale"_a = 32768.0, "dynamic_growth_steps"_a = 2000, "name"_a = nb::none(),
          "dynamic"_a = true)
      .def("scale_loss", &keras::LossScaleOptimizer::scale_loss, "loss"_a)
      .def(
          "apply_gradients",
          [](keras::LossScaleOptimizer& opt, nb::iterable grads_and_vars) {
            opt.apply_gradients(grads_and_vars_from_python(grads_and_vars));
          },
          "grads_and_vars"_a)
      .def(
          "apply",
          [](keras::LossScaleOptimizer& opt, std::vector<std::optional<Tensor>> grads, nb::handle variables) {
            std::vector<Tensor> vars;
            if (!variables.is_none()) {
              vars = variables_from_python(variables);
            } else {
              if (!opt.inner_optimizer().built())
                ug::fail<ug::ValueError>(
                    "[LossScaleOptimizer.apply] pass trainable_variables: the optimizer is not "
                    "built yet");
              for (const auto& g : opt.inner_optimizer().param_groups())
                vars.insert(vars.end(), g.params().begin(), g.params().end());
            }
            if (vars.size() != grads.size())
              ug::fail<ug::ValueError>("[LossScaleOptimizer.apply] ", grads.size(), " gradients for ", vars.size(),
                                       " variables");
            std::vector<std::pair<Tensor, Tensor>> pairs;
            for (size_t i = 0; i < vars.size(); ++i) pairs.emplace_back(grads[i].value_or(Tensor()), vars[i]);
            opt.apply_gradients(pairs);
          },
          "grads"_a, "trainable_variables"_a = nb::none())
      .def_prop_ro("dynamic_scale", &keras::LossScaleOptimizer::dynamic_scale, "The scale now (a 0-d float32 tensor).")
      .def_prop_ro("step_counter", &keras::LossScaleOptimizer::step_counter)
      .def_prop_ro("initial_scale", &keras::LossScaleOptimizer::initial_scale)
      .def_prop_ro("dynamic_growth_steps", &keras::LossScaleOptimizer::dynamic_growth_steps)
      .def_prop_ro("inner_optimizer", &keras::LossScaleOptimizer::inner_ptr)
      .def_prop_ro("iterations", [](const keras::LossScaleOptimizer& o) { return o.inner_optimizer().iterations(); })
      .def_prop_rw(
          "learning_rate", [](const keras::LossScaleOptimizer& o) { return learning_rate(o.inner_optimizer()); },
          [](keras::LossScaleOptimizer& o, double lr) { set_learning_rate(o.inner_optimizer(), lr); });
}

}  // namespace ugpy
