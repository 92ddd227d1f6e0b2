// ug::optim::Optimizer: parameter groups with their hyperparameters, per-parameter state,
// zero_grad, state_dict/load_state_dict, as in PyTorch. A subclass is one update rule: it
// says which state a parameter starts with (init_state) and how one step changes a parameter
// and its state in place (update_param, a fused loop over the elements). The same two
// functions serve the imperative step() and the functional init/update (functional.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/core/ordered_dict.h"

namespace ug::optim {

using TensorDict = OrderedDict<Tensor>;
/** A hyperparameter value: a number, a flag, a pair (Adam's betas), a name, or none (torch's
 *  None, as LBFGS's line_search_fn). */
using HyperValue = std::variant<double, bool, std::pair<double, double>, std::string, std::monostate>;
/** Adam-like optimizers' (beta1, beta2). */
using Betas = std::pair<double, double>;
/** A group's hyperparameters by name ("lr", "betas", ...), as in torch's param_groups. */
using Hyper = OrderedDict<HyperValue>;
/** Functional optimizer state: one state dict (name -> tensor) per parameter name. */
using OptState = OrderedDict<TensorDict>;

/** Declares a chainable option, as libtorch's TORCH_ARG: AdamOptions(1e-3).betas({0.9, 0.99}). */
#define UG_OPTIM_ARG(T, name)               \
 public:                                    \
  auto& name(const T& value) {              \
    name##_ = value;                        \
    return *this;                           \
  }                                         \
  const T& name() const { return name##_; } \
                                            \
 private:                                   \
  T name##_

/** Reads a hyperparameter of a known type, with a clear error when absent or of another kind. */
template <class T> const T& hyper_get(const Hyper& h, const std::string& key) {
  const HyperValue* v = h.find(key);
  if (!v) fail<ValueError>("[optim] param group has no option '", key, "'");
  if (!std::holds_alternative<T>(*v)) fail<TypeError>("[optim] option '", key, "' has another type");
  return std::get<T>(*v);
}

/** Some parameters and their hyperparameters; options not given take the optimizer's defaults. */
class ParamGroup {
 public:
  ParamGroup(std::vector<Tensor> params, Hyper options = {})
      : params_(std::move(params)), options_(std::move(options)) {}

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  Hyper& options() { return options_; }
  const Hyper& options() const { return options_; }
  /** The learning rate, readable and settable: `group.lr() = 0.1`. */
  double& lr() { return std::get<double>(slot("lr")); }
  double lr() const { return hyper_get<double>(options_, "lr"); }
  bool has(const std::string& key) const { return options_.contains(key); }

 private:
  /** The value of a number option, checked to exist and be a number. */
  HyperValue& slot(const std::string& key);
  std::vector<Tensor> params_;
  Hyper options_;
};

/** The optimizer's state as torch's state_dict holds it: state by parameter index (over all
 *  groups, in order) and each group's options with its parameters' indices. */
struct OptimizerStateDict {
  struct Group {
    Hyper options;
    std::vector<int64_t> params;
  };
  std::vector<std::pair<int64_t, TensorDict>> state;
  std::vector<Group> param_groups;
};

class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::string& name() const { return name_; }
  /** Updates every parameter that has a gradient, without recording autograd. The closure, if
   *  given, re-evaluates the loss (with grad mode on) first; its result is returned. */
  virtual Tensor step(const LossClosure& closure = nullptr);
  /** step() without a closure, skipped when `skip` (a 0-d bool tensor) holds: GradScaler's
   *  step after inf or NaN gradients, which a compiled step decides at every run. */
  void step_unless(const Tensor& skip);
  /** Clears the gradients: to none (the default) or to zeros in place. */
  void zero_grad(bool set_to_none = true);
  /** TensorFlow/Keras's step from explicit (gradient, variable) pairs, as tape.gradient gives
   *  them: updates exactly those variables (which must be this optimizer's parameters) with
   *  those gradients; the other parameters and every .grad are left as they were. */
  virtual void apply_gradients(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars);
  /** apply_gradients skipped when `skip` (a 0-d bool tensor) holds, as step_unless; the
   *  gradients as given (not summed over replicas: cross_replica). */
  void apply_gradients_unless(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars, const Tensor& skip);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /** Adds a group; options it lacks are taken from defaults(). */
  void add_param_group(ParamGroup group);
  /** The options a group without its own gets; also the hyperparameters of init/update. */
  Hyper& defaults() { return defaults_; }
  const Hyper& defaults() const { return defaults_; }

  /** The state kept for a parameter ("step", "exp_avg", ...), empty before its first step. */
  TensorDict& state(const Tensor& param) { return state_[param.impl_ref().get()]; }
  const TensorDict* find_state(const Tensor& param) const;

  /** The state, sharing its tensors; load_state_dict copies them, so a resumed run continues
   *  exactly where the saved one stopped. */
  OptimizerStateDict state_dict() const;
  void load_state_dict(const OptimizerStateDict& sd);

  // ---- functional use (optax's init/update), with the defaults() hyperparameters ---------
  /** The starting state for each parameter. */
  OptState init(const TensorDict& params) const;
  /** The updates (new value - old value of each parameter) and the next state; nothing given
   *  is modified. Parameters without a gradient get zero updates and keep their state. */
  std::pair<TensorDict, OptState> update(const TensorDict& grads, const OptState& state,
                                         const TensorDict& params) const;

 protected:
  Optimizer(std::string name, std::vector<ParamGroup> groups, Hyper defaults);
  /** The state a parameter starts with (may be empty, e.g. SGD's lazily made buffer). */
  virtual TensorDict init_state(const Tensor& param, const Hyper& group) const = 0;
  /** Whether the state entry `key` is one number per parameter (NAdam's mu_product), not an
   *  array of the parameter's shape; the step counter aside. */
  virtual bool scalar_state(const std::string& /*key*/) const { return false; }
  /** Whether the state entry `key` is over all parameters at once (LBFGS's history), not of one
   *  parameter's shape: loaded as a copy, its shape and dtype as they are. */
  virtual bool flat_state(const std::string& /*key*/) const { return false; }
  /** One step: updates `param` (contiguous, float32 or float64) and `state` in place from `grad`
   *  (contiguous, same shape and dtype). */
  virtual void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const = 0;
  /** Checks grad against param, makes both contiguous, runs update_param, writes back. */
  void update_one(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const;
  /** The shape and dtype checks of update_one. */
  void check_update(const Tensor& param, const Tensor& grad) const;
  /** update()'s rule for one parameter: its update (the new value minus param) and new state in
   *  fresh tensors, param and state only read. By default copies them, runs update_param on the
   *  copies and subtracts; an optimizer whose kernel reads one array and writes another (Adam)
   *  overrides it, writing the update in the same pass (a compiled training step runs it at
   *  every step). With `applied`, param + that update instead (graph/update_replay.h). With
   *  `grad_dies` (a compiled run holds grad alone and drops it after), an override may write the
   *  update over grad: one buffer fewer, and the one the pass has just read into cache. */
  virtual std::pair<Tensor, TensorDict> update_fresh(const Hyper& group, const Tensor& param, const Tensor& grad,
                                                     const TensorDict& state, bool applied = false,
                                                     bool grad_dies = false) const;
  /** update_fresh's update (or with `applied`, param + it) where the state is the caller's alone
   *  (a donated compiled step's): the state is written in place, the update into a fresh
   *  tensor, param only read. By default a copy of param updated in place, minus param (and
   *  plus param when applied); Adam overrides it with one pass. */
  virtual Tensor update_owned(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state,
                              bool applied, bool grad_dies = false) const;
  /** A parameter a step updates: its group's index and the parameter. */
  using StepParam = std::pair<size_t, Tensor>;
  /** The update of step(): each parameter in place from its gradient (detached, same order),
   *  with its group's options. A subclass with a rule over all of them (Keras's clipping and
   *  iteration count) overrides it. */
  virtual void apply_step(const std::vector<StepParam>& params, const std::vector<Tensor>& grads);
  /** Runs apply_step as the op optimizer_step: a compiled training step (a trace of
   *  `loss.backward(); opt.step()`) calls it back at every run, on the live parameters and
   *  state with that run's gradients. `skip` (a 0-d bool tensor, if given) holding skips it. */
  void step_params(const std::vector<StepParam>& params, const std::vector<Tensor>& grads, const Tensor& skip = {});
  /** The parameters that have a gradient now, with those gradients (detached). */
  std::pair<std::vector<StepParam>, std::vector<Tensor>> params_with_grads() const;
  /** update()'s rule for one parameter: its update and new state, the inputs untouched. With
   *  `applied` (a compiled step's replay only), param + the update in place of the update;
   *  `grad_dies` as update_fresh's. */
  std::pair<Tensor, TensorDict> updated(const Tensor& param, const Tensor& grad, const TensorDict& state,
                                        bool applied = false, bool grad_dies = false) const;

 private:
  std::string name_;
  std::vector<ParamGroup> groups_;
  Hyper defaults_;
  std::unordered_map<const TensorImpl*, TensorDict> state_;
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);  // watched by compiled steps
};

/** How a layer above makes apply_gradients' (gradient, variable) pairs agree over replicas (one
 *  process each): a distribute strategy's replica context (train/strategy.h) sums the gradients
 *  and mirrors each variable from the first replica at its first step, as TensorFlow's
 *  apply_gradients inside strategy.run. Set for the thread while a CrossReplicaGuard lives. */
using GradientReducer =
    std::function<std::vector<std::pair<Tensor, Tensor>>(const std::vector<std::pair<Tensor, Tensor>>&)>;
class CrossReplicaGuard {
 public:
  explicit CrossReplicaGuard(GradientReducer reducer);
  ~CrossReplicaGuard();
  CrossReplicaGuard(const CrossReplicaGuard&) = delete;
  CrossReplicaGuard& operator=(const CrossReplicaGuard&) = delete;

 private:
  GradientReducer previous_;
};
/** The pairs as the replicas agree on them where a CrossReplicaGuard is open on the thread
 *  (the gradients summed), else as given; apply_gradients does this first. */
std::vector<std::pair<Tensor, Tensor>> cross_replica(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars);

namespace detail {
/** Runs fn(begin, end) over [0, n), split across the thread pool when n is large. */
void for_chunks(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
/** The "step" counter (a float32 or float64 scalar tensor, as torch keeps it), incremented;
 *  returns its new value. */
double increment_step(TensorDict& state);
/** A scalar tensor holding 0, float64 under a float64 default dtype, else float32 (torch's
 *  rule): a fresh step counter. */
Tensor zero_step();
/** torch's checks of a learning rate, epsilon, betas and weight decay, named after the optimizer. */
void check_common(const char* name, double lr, double eps, Betas betas, double weight_decay);
}  // namespace detail

/** Dispatches a kernel body on the parameter's floating dtype (float32 or float64). */
#define UG_OPTIM_DISPATCH(dtype, T, ...)                                                                \
  switch (dtype) {                                                                                      \
    case ::ug::DType::Float32: {                                                                        \
      using T = float;                                                                                  \
      __VA_ARGS__;                                                                                      \
      break;                                                                                            \
    }                                                                                                   \
    case ::ug::DType::Float64: {                                                                        \
      using T = double;                                                                                 \
      __VA_ARGS__;                                                                                      \
      break;                                                                                            \
    }                                                                                                   \
    default: ::ug::fail<::ug::TypeError>("[optim] parameters must be float32 or float64, got ", dtype); \
  }

}  // namespace ug::optim
