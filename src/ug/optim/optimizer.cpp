#include "ug/optim/optimizer.h"

#include <algorithm>

#include "ug/autograd/grad_trace.h"
#include "ug/core/value_read.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/graph/update_replay.h"
#include "ug/core/thread_pool.h"

namespace ug::optim {

HyperValue& ParamGroup::slot(const std::string& key) {
  HyperValue* v = options_.find(key);
  if (!v) fail<ValueError>("[optim] param group has no option '", key, "'");
  if (!std::holds_alternative<double>(*v)) fail<TypeError>("[optim] option '", key, "' is not a number");
  return *v;
}

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, Hyper defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  const auto& params = group.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.defined()) fail<ValueError>("[", name_, "] a parameter is an undefined tensor");
    if (!p.is_leaf()) fail<ValueError>("[", name_, "] can't optimize a non-leaf tensor");
    for (size_t j = 0; j < i; ++j)
      if (params[j].impl_ref().get() == p.impl_ref().get())
        fail<ValueError>("[", name_, "] a parameter group contains the same parameter twice");
    for (const ParamGroup& other : groups_)
      for (const Tensor& q : other.params())
        if (q.impl_ref().get() == p.impl_ref().get())
          fail<ValueError>("[", name_, "] some parameters appear in more than one parameter group");
  }
  for (const auto& [key, value] : defaults_)
    if (!group.options().contains(key)) group.options().insert(key, value);
  groups_.push_back(std::move(group));
}

namespace {
/** The dtype a parameter updates in, and its state is kept in: float32 for a 16-bit one. */
DType update_dtype(DType param) { return param == DType::BFloat16 || param == DType::Float16 ? DType::Float32 : param; }
}  // namespace

const TensorDict* Optimizer::find_state(const Tensor& param) const {
  auto it = state_.find(param.impl_ref().get());
  return it == state_.end() ? nullptr : &it->second;
}

void Optimizer::check_update(const Tensor& param, const Tensor& grad) const {
  if (grad.shape() != param.shape())
    fail<ValueError>("[", name_, "] gradient of shape ", grad.shape(), " for a parameter of shape ", param.shape());
  if (!is_floating(param.dtype()))
    fail<TypeError>("[", name_, "] parameters must be floating (float16, bfloat16, float32 or float64), got ",
                    param.dtype());
  if (grad.dtype() != param.dtype())
    fail<TypeError>("[", name_, "] gradient of dtype ", grad.dtype(), " for a parameter of dtype ", param.dtype());
}

void Optimizer::update_one(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const {
  check_update(param, grad);
  // A 16-bit parameter updates in float32, its state kept in float32, the result rounded once
  // into it: 16-bit arithmetic at each step would lose the small moments and updates.
  const DType compute = update_dtype(param.dtype());
  // The kernels run over plain contiguous arrays; a strided parameter is updated through a copy.
  Tensor work = param.dtype() != compute ? param.to(compute) : param.is_contiguous() ? param : param.contiguous();
  if (state.empty()) state = init_state(work, group);
  for (auto& [name, t] : state)  // made or loaded in the parameter's 16-bit dtype
    if (name != "step" && t.dtype() == param.dtype() && t.dtype() != compute) t = t.to(compute);
  update_param(group, work, grad.to(compute).contiguous(), state);
  if (work.impl_ref().get() != param.impl_ref().get()) Tensor(param).copy_(work);
  param.bump_version();
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard enable;
    loss = closure();
  }
  NoGradGuard no_grad;
  auto [params, grads] = params_with_grads();
  step_params(params, grads);
  return loss;
}

std::pair<std::vector<Optimizer::StepParam>, std::vector<Tensor>> Optimizer::params_with_grads() const {
  std::vector<StepParam> params;
  std::vector<Tensor> grads;
  for (size_t i = 0; i < groups_.size(); ++i)
    for (const Tensor& p : groups_[i].params())
      if (Tensor grad = p.grad(); grad.defined()) {
        params.emplace_back(i, p);
        grads.push_back(grad.detach());
      }
  return {std::move(params), std::move(grads)};
}

void Optimizer::apply_step(const std::vector<StepParam>& params, const std::vector<Tensor>& grads) {
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [group, p] = params[i];
    update_one(groups_.at(group).options(), p, grads[i], state(p));
  }
}

namespace {
const graph::OpDef kOptimizerStep("optimizer_step");

std::vector<const Tensor*> pointers(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : tensors) out.push_back(&t);
  return out;
}
}  // namespace

void Optimizer::step_unless(const Tensor& skip) {
  NoGradGuard no_grad;
  auto [params, grads] = params_with_grads();
  step_params(params, grads, skip);
}

namespace {
/** Whether a step's skip flag holds; read at the trace and again at every run of the program. */
bool holds(const Tensor& skip) {
  ValueReadScope read;
  return skip.defined() && skip.item<bool>();
}
}  // namespace

void Optimizer::step_params(const std::vector<StepParam>& params, const std::vector<Tensor>& grads,
                            const Tensor& skip) {
  graph::OpCall call(kOptimizerStep);
  if (!holds(skip)) apply_step(params, grads);
  if (!call.capturing()) return;
  // Traced: the graph passes this step's gradients and takes the parameters back as written
  // in place; a run calls the step again on the live parameters and state ("effect": the
  // program keeps it whether or not its outputs are read).
  std::vector<const Tensor*> inputs, outputs;
  for (const auto& [group, p] : params) inputs.push_back(&p);
  for (const Tensor& g : grads) inputs.push_back(&g);
  if (skip.defined()) inputs.push_back(&skip);
  for (const auto& [group, p] : params) outputs.push_back(&p);
  if (autograd::GradTrace* trace = autograd::GradTrace::current())
    for (size_t i = 0; i < params.size(); ++i) trace->read(params[i].second, grads[i]);
  call.set_attrs({{"optimizer", name_}, {"effect", int64_t(1)}});
  call.set_replay(
      [this, alive = std::weak_ptr<const bool>(alive_), params, skips = skip.defined()](const std::vector<Tensor>& in) {
        if (alive.expired())
          fail<RuntimeError>("[optimizer_step] the optimizer this compiled step calls was deleted: keep it alive");
        graph::OpCall run(kOptimizerStep);  // a profiler times the step as an op of the program
        NoGradGuard no_grad;
        // A parameter the program wrote before the step (copy_) holds that value in the graph only.
        for (size_t i = 0; i < params.size(); ++i)
          if (const Tensor& p = params[i].second; in[i].storage() != p.storage()) Tensor(p).copy_(in[i]);
        const auto n = static_cast<std::ptrdiff_t>(params.size());
        std::vector<Tensor> run_grads(in.begin() + n, in.begin() + 2 * n);
        if (!(skips && holds(in.back()))) apply_step(params, run_grads);
        std::vector<Tensor> out;
        for (const auto& [group, p] : params) out.push_back(p);
        run.finish(graph::Inputs(pointers(in)), graph::Outputs(pointers(out)));
        return out;
      },
      graph::ReplaySizes::None);
  call.finish(inputs, outputs);
}

namespace {
thread_local GradientReducer t_cross_replica;
}  // namespace

CrossReplicaGuard::CrossReplicaGuard(GradientReducer reducer) : previous_(std::move(t_cross_replica)) {
  t_cross_replica = std::move(reducer);
}

CrossReplicaGuard::~CrossReplicaGuard() { t_cross_replica = std::move(previous_); }

std::vector<std::pair<Tensor, Tensor>> cross_replica(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars) {
  return t_cross_replica ? t_cross_replica(grads_and_vars) : grads_and_vars;
}

void Optimizer::apply_gradients(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars) {
  apply_gradients_unless(cross_replica(grads_and_vars), Tensor());
}

void Optimizer::apply_gradients_unless(const std::vector<std::pair<Tensor, Tensor>>& grads_and_vars,
                                       const Tensor& skip) {
  // Every parameter's .grad is set aside, the given gradients put in their place for one
  // step, and the previous gradients restored, so the one update rule serves both styles.
  std::vector<std::pair<Tensor, Tensor>> saved;
  for (ParamGroup& g : groups_)
    for (Tensor& p : g.params()) saved.emplace_back(p, p.grad());
  for (const auto& [grad, var] : grads_and_vars) {
    const TensorImpl* impl = var.impl_ref().get();
    const bool known =
        std::any_of(saved.begin(), saved.end(), [impl](const auto& s) { return s.first.impl_ref().get() == impl; });
    if (!known)
      fail("[", name_, ".apply_gradients] a variable of shape ", var.shape(), " is not one of its parameters");
    if (grad.defined() && grad.shape() != var.shape())
      fail("[", name_, ".apply_gradients] gradient of shape ", grad.shape(), " for a variable of shape ", var.shape());
  }
  for (auto& [p, grad] : saved) p.set_grad(Tensor());
  for (const auto& [grad, var] : grads_and_vars) var.set_grad(grad.defined() ? grad.detach() : Tensor());
  try {
    if (skip.defined()) step_unless(skip);
    else step();
  } catch (...) {
    for (auto& [p, grad] : saved) p.set_grad(grad);
    throw;
  }
  for (auto& [p, grad] : saved) p.set_grad(grad);
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  autograd::GradTrace* trace = autograd::GradTrace::current();
  for (ParamGroup& g : groups_)
    for (Tensor& p : g.params()) {
      if (trace) trace->cleared(p);
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) p.set_grad(Tensor());
      else grad.detach().zero_();
    }
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict sd;
  int64_t index = 0;
  for (const ParamGroup& g : groups_) {
    OptimizerStateDict::Group rec{g.options(), {}};
    for (const Tensor& p : g.params()) {
      if (const TensorDict* st = find_state(p); st && !st->empty()) sd.state.emplace_back(index, *st);
      rec.params.push_back(index++);
    }
    sd.param_groups.push_back(std::move(rec));
  }
  return sd;
}

void Optimizer::load_state_dict(const OptimizerStateDict& sd) {
  if (sd.param_groups.size() != groups_.size())
    fail<ValueError>("[", name_, "] loaded state dict has ", sd.param_groups.size(),
                     " parameter groups, the optimizer has ", groups_.size(),
                     groups_.empty() ? " (a Keras optimizer needs build(variables) first)" : "");
  std::vector<Tensor> by_index;
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (sd.param_groups[i].params.size() != groups_[i].params().size())
      fail<ValueError>("[", name_,
                       "] loaded state dict contains a parameter group that doesn't match the size of "
                       "optimizer's group ",
                       i);
    for (const Tensor& p : groups_[i].params()) by_index.push_back(p);
  }
  NoGradGuard no_grad;
  std::unordered_map<const TensorImpl*, TensorDict> state;
  for (const auto& [index, st] : sd.state) {
    if (index < 0 || index >= static_cast<int64_t>(by_index.size()))
      fail<IndexError>("[", name_, "] state for parameter ", index, " of ", by_index.size());
    const Tensor& p = by_index[index];
    TensorDict copy;
    // Like torch: the step counter keeps its float32 or float64 (others, e.g. an old integer
    // count, become float32), the rest takes the parameter's dtype (float32 for a 16-bit one,
    // which updates in float32: update_one). The update loops walk
    // state and parameter together, so their shapes must agree, but for per-parameter numbers.
    for (const auto& [key, t] : st) {
      if (key == "step") {
        if (t.numel() != 1)
          fail<ValueError>("[", name_, "] loaded step counter of parameter ", index, " has shape ", t.shape(),
                           ", not a single number");
        copy.insert(key,
                    t.to(t.dtype() == DType::Float64 ? DType::Float64 : DType::Float32, /*copy=*/true).reshape({}));
        continue;
      }
      if (flat_state(key)) {
        copy.insert(key, t.to(t.dtype(), /*copy=*/true).contiguous());
        continue;
      }
      if (scalar_state(key) && t.numel() == 1) {
        copy.insert(key, t.to(update_dtype(p.dtype()), /*copy=*/true).reshape({}));
        continue;
      }
      if (!(t.shape() == p.shape()))
        fail<ValueError>("[", name_, "] loaded state '", key, "' of parameter ", index, " has shape ", t.shape(),
                         ", the parameter ", p.shape());
      copy.insert(key, t.to(update_dtype(p.dtype()), /*copy=*/true).contiguous());
    }
    state[p.impl_ref().get()] = std::move(copy);
  }
  for (size_t i = 0; i < groups_.size(); ++i) groups_[i].options() = sd.param_groups[i].options;
  state_ = std::move(state);
}

namespace {
/** One parameter's functional update, an op of its own: a compiled training step (ug.jit) has
 *  no graph form for the fused update rule and calls it back (graph::Replay). */
const graph::OpDef kOptimizerUpdate("optimizer_update");

/** Whether a compiled run holds a state tensor alone (a donated opt_state at its last read:
 *  one reference to the tensor and one to its storage, as onnx::run_graph's in-place rule), so
 *  that the update may write the next state into it. */
bool owned(const Tensor& t) {
  return t.impl_ref()->use_count() == 1 && t.storage()->use_count() == 1 && t.is_contiguous() && !t.impl().batch() &&
         !t.requires_grad();
}
}  // namespace

std::pair<Tensor, TensorDict> Optimizer::update_fresh(const Hyper& group, const Tensor& param, const Tensor& grad,
                                                      const TensorDict& state, bool applied, bool) const {
  TensorDict fresh;
  for (const auto& [name, t] : state) fresh.insert(name, t.clone());
  Tensor value = param.clone().contiguous();
  update_one(group, value, grad, fresh);
  value.sub_(param);
  if (applied) value.add_(param);
  return {std::move(value), std::move(fresh)};
}

Tensor Optimizer::update_owned(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state,
                               bool applied, bool) const {
  Tensor value = param.clone().contiguous();
  update_one(group, value, grad, state);
  value.sub_(param);
  if (applied) value.add_(param);
  return value;
}

std::pair<Tensor, TensorDict> Optimizer::updated(const Tensor& param, const Tensor& grad, const TensorDict& state,
                                                 bool applied, bool grad_dies) const {
  graph::OpCall call(kOptimizerUpdate);
  auto [delta, fresh] = update_fresh(defaults_, param.detach(), grad.detach(), state, applied, grad_dies);
  std::vector<const Tensor*> inputs{&param, &grad}, outputs{&delta};
  std::vector<std::string> names;
  for (const auto& [name, t] : state) {
    inputs.push_back(&t);
    names.push_back(name);
  }
  for (const auto& [name, t] : fresh) outputs.push_back(&t);
  if (call.capturing()) {
    call.set_attrs({{"optimizer", name_}});
    // The update, and the form a program runs where it only adds the update to the parameter.
    auto replay = [this, alive = std::weak_ptr<const bool>(alive_), names](bool applied) {
      return [this, alive, names, applied](const std::vector<Tensor>& in) {
        if (alive.expired())
          fail<RuntimeError>(
              "[optimizer_update] the optimizer this compiled step calls back was deleted: create it "
              "outside the jitted function and keep it alive");
        // When the run holds every state array alone, the eager step's in-place update writes the
        // next state over it (no fresh arrays: the peak of a donated step is one state lower).
        const bool in_place =
            names.size() > 0 &&
            std::all_of(in.begin() + 2, in.end(),
                        [&](const Tensor& t) { return t.numel() != in[0].numel() || owned(t); }) &&
            std::any_of(in.begin() + 2, in.end(), [&](const Tensor& t) { return t.numel() == in[0].numel(); });
        // The gradient is the run's alone too, as it is at its last read: the update goes over it.
        const bool grad_dies = owned(in[1]);
        TensorDict st;
        for (size_t k = 0; k < names.size(); ++k)
          st.insert(names[k], in_place && !owned(in[2 + k]) ? in[2 + k].clone() : in[2 + k]);
        if (in_place) {
          graph::OpCall run(kOptimizerUpdate);  // a profiler times the update as an op of the program
          NoGradGuard no_grad;
          std::vector<Tensor> out{update_owned(defaults_, in[0].detach(), in[1].detach(), st, applied, grad_dies)};
          for (const auto& [name, t] : st) out.push_back(t);
          run.finish(graph::Inputs(pointers(in)), graph::Outputs(pointers(out)));
          return out;
        }
        auto [v, next] = updated(in[0], in[1], st, applied, grad_dies);
        std::vector<Tensor> out{v};
        for (const auto& [name, t] : next) out.push_back(t);
        return out;
      };
    };
    call.set_replay(graph::UpdateReplay{replay(false), replay(true)}, graph::ReplaySizes::None);
  }
  call.finish(inputs, outputs);
  return {delta, std::move(fresh)};
}

OptState Optimizer::init(const TensorDict& params) const {
  NoGradGuard no_grad;
  OptState out;
  for (const auto& [key, p] : params) out.insert(key, init_state(p.to(update_dtype(p.dtype())), defaults_));
  return out;
}

std::pair<TensorDict, OptState> Optimizer::update(const TensorDict& grads, const OptState& state,
                                                  const TensorDict& params) const {
  NoGradGuard no_grad;
  TensorDict updates;
  OptState next;
  for (const auto& [key, p] : params) {
    const Tensor* g = grads.find(key);
    const TensorDict* st = state.find(key);
    if (!st) fail<ValueError>("[", name_, ".update] no state for parameter '", key, "' (made by init?)");
    if (!g || !g->defined()) {
      updates.insert(key, zeros_like(p));
      next.insert(key, *st);
      continue;
    }
    auto [delta, fresh] = updated(p, *g, *st);
    updates.insert(key, std::move(delta));
    next.insert(key, std::move(fresh));
  }
  return {std::move(updates), std::move(next)};
}

namespace detail {

void for_chunks(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  // Elementwise updates are memory bound: split only when each piece is worth a thread.
  constexpr int64_t kGrain = 1 << 16;
  if (n <= kGrain) fn(0, n);
  else parallel_for(n, kGrain, fn);
}

double increment_step(TensorDict& state) {
  const Tensor& s = state.at("step");
  if (s.dtype() == DType::Float64) return *s.data_ptr<double>() += 1.0;
  return *s.data_ptr<float>() += 1.0f;
}

Tensor zero_step() {
  // torch's _get_scalar_dtype: float64 under a float64 default, else float32.
  return zeros({}, Options{get_default_dtype() == DType::Float64 ? DType::Float64 : DType::Float32, {}});
}

void check_common(const char* name, double lr, double eps, std::pair<double, double> betas, double weight_decay) {
  if (lr < 0) fail<ValueError>("[", name, "] Invalid learning rate: ", lr);
  if (eps < 0) fail<ValueError>("[", name, "] Invalid epsilon value: ", eps);
  if (betas.first < 0 || betas.first >= 1)
    fail<ValueError>("[", name, "] Invalid beta parameter at index 0: ", betas.first);
  if (betas.second < 0 || betas.second >= 1)
    fail<ValueError>("[", name, "] Invalid beta parameter at index 1: ", betas.second);
  if (weight_decay < 0) fail<ValueError>("[", name, "] Invalid weight_decay value: ", weight_decay);
}

}  // namespace detail

}  // namespace ug::optim
