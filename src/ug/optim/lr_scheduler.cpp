// A line-by-line port of torch 2.13's torch/optim/lr_scheduler.py for these schedulers, so
// the learning rates agree to the last bit (same operations in the same order, in double).
#include "ug/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace ug::optim::lr_scheduler {
namespace {

/** Python's floor modulo and division (the schedules compare epochs with them). */
int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
int64_t py_floordiv(int64_t a, int64_t b) { return (a - py_mod(a, b)) / b; }

int64_t bisect_right(const std::vector<int64_t>& sorted, int64_t x) {
  return std::upper_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
}

double as_double(const SchedulerState& s, const std::string& key) {
  const auto* v = s.find(key);
  if (!v || !std::holds_alternative<double>(*v)) fail<ValueError>("[lr_scheduler] state has no number '", key, "'");
  return std::get<double>(*v);
}
/** A per-group list: the schedules index it by group, so its length is checked. */
std::vector<double> as_list(const SchedulerState& s, const std::string& key, const Optimizer& opt) {
  const auto* v = s.find(key);
  if (!v || !std::holds_alternative<std::vector<double>>(*v))
    fail<ValueError>("[lr_scheduler] state has no list '", key, "'");
  const auto& list = std::get<std::vector<double>>(*v);
  if (list.size() != opt.param_groups().size())
    fail<ValueError>("[lr_scheduler] state list '", key, "' has ", list.size(), " values for ",
                     opt.param_groups().size(), " parameter groups");
  return list;
}

/** One value per group: a single value is repeated, a list must match the group count. */
std::vector<double> per_group(const char* name, const Optimizer& opt, const std::vector<double>& values) {
  const size_t n = opt.param_groups().size();
  if (values.size() == 1) return std::vector<double>(n, values[0]);
  if (values.size() != n)
    fail<ValueError>("[lr_scheduler] ", name, " must have the same length as optimizer.param_groups. ", name, " has ",
                     values.size(), " values, param_groups has ", n, ".");
  return values;
}

/** A composite scheduler's children's states, each under "_schedulers.<i>." as torch keeps them. */
void save_children(const std::vector<std::shared_ptr<LRScheduler>>& children, SchedulerState& out) {
  for (size_t i = 0; i < children.size(); ++i)
    for (const auto& [key, value] : children[i]->state_dict())
      out.insert("_schedulers." + std::to_string(i) + "." + key, value);
}
void load_children(const std::vector<std::shared_ptr<LRScheduler>>& children, const SchedulerState& state) {
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string prefix = "_schedulers." + std::to_string(i) + ".";
    SchedulerState child;
    for (const auto& [key, value] : state)
      if (key.rfind(prefix, 0) == 0) child.insert(key.substr(prefix.size()), value);
    children[i]->load_state_dict(child);
  }
}

}  // namespace

bool is_counter(const std::string& key) {
  return key.find("epoch") != std::string::npos || key.find("_count") != std::string::npos ||
         key.find("num_bad") != std::string::npos || key.find("cooldown") != std::string::npos;
}

// ---- LRScheduler ---------------------------------------------------------------------------

std::vector<double> LRScheduler::group_values(const std::string& key) const {
  std::vector<double> out;
  for (const ParamGroup& g : opt_->param_groups()) out.push_back(hyper_get<double>(g.options(), key));
  return out;
}

void LRScheduler::initialize(int64_t last_epoch) {
  auto& groups = opt_->param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (last_epoch == -1) {
      if (!groups[i].has("initial_lr")) groups[i].options().insert("initial_lr", groups[i].lr());
    } else if (!groups[i].has("initial_lr")) {
      fail<ValueError>("[lr_scheduler] param 'initial_lr' is not specified in param_groups[", i,
                       "] when resuming scheduler with last_epoch >= 0 (load the optimizer's state first)");
    }
  }
  base_lrs_ = group_values("initial_lr");
  last_epoch_ = last_epoch;
  initial_step();
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  is_initial_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{is_initial_};
  step();
}

void LRScheduler::step() {
  ++step_count_;
  update_lr();
}

void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<double> values;
  if (!epoch) {
    ++last_epoch_;
    values = get_lr();
  } else {
    last_epoch_ = *epoch;
    std::optional<std::vector<double>> closed = closed_form_lr();
    values = closed ? std::move(*closed) : get_lr();
  }
  auto& groups = opt_->param_groups();
  if (values.size() != groups.size())
    fail<ValueError>("[lr_scheduler] ", values.size(), " learning rates for ", groups.size(), " parameter groups");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].lr() = values[i];
  last_lr_ = group_values("lr");
}

SchedulerState LRScheduler::state_dict() const {
  return {{"last_epoch", static_cast<double>(last_epoch_)},
          {"_step_count", static_cast<double>(step_count_)},
          {"base_lrs", base_lrs_},
          {"_last_lr", last_lr_}};
}

void LRScheduler::load_state_dict(const SchedulerState& state) {
  // All read (and checked) before any is set.
  std::vector<double> base_lrs = as_list(state, "base_lrs", *opt_), last_lr = as_list(state, "_last_lr", *opt_);
  const double last_epoch = as_double(state, "last_epoch"), step_count = as_double(state, "_step_count");
  last_epoch_ = static_cast<int64_t>(last_epoch);
  step_count_ = static_cast<int64_t>(step_count);
  base_lrs_ = std::move(base_lrs);
  last_lr_ = std::move(last_lr);
}

// ---- StepLR, MultiStepLR, ExponentialLR ------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) fail<ValueError>("[StepLR] step_size must be positive, got ", step_size);
  initialize(last_epoch);
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_values("lr");
  if (last_epoch_ == 0 || py_mod(last_epoch_, step_size_) != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, py_floordiv(last_epoch_, step_size_)));
  return lrs;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initialize(last_epoch);
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_values("lr");
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  for (double& lr : lrs) lr = lr * std::pow(gamma_, static_cast<double>(count));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(bisect_right(milestones_, last_epoch_))));
  return lrs;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer), gamma_(gamma) {
  initialize(last_epoch);
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_values("lr");
  if (is_initial_) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return lrs;
}

// ---- CosineAnnealingLR, LinearLR ------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  if (T_max <= 0) fail<ValueError>("[CosineAnnealingLR] T_max must be positive, got ", T_max);
  initialize(last_epoch);
}

std::vector<double> CosineAnnealingLR::get_lr() {
  constexpr double pi = std::numbers::pi;
  std::vector<double> lrs = group_values("lr");
  if (is_initial_) return lrs;
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  for (size_t i = 0; i < lrs.size(); ++i) {
    if (step_count_ == 1 && last_epoch_ > 0)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1 + std::cos(e * pi / T)) / 2;
    else if (py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(pi / T)) / 2;
    else lrs[i] = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lrs[i] - eta_min_) + eta_min_;
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(
        eta_min_ +
        (base - eta_min_) *
            (1 + std::cos(std::numbers::pi * static_cast<double>(last_epoch_) / static_cast<double>(T_max_))) / 2);
  return lrs;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters,
                   int64_t last_epoch)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  if (start_factor > 1.0 || start_factor <= 0)
    fail<ValueError>("[LinearLR] Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  if (end_factor > 1.0 || end_factor < 0)
    fail<ValueError>("[LinearLR] Ending multiplicative factor expected to be between 0 and 1.");
  initialize(last_epoch);
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_values("lr");
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  for (double& lr : lrs)
    lr =
        lr * (1.0 + d / (static_cast<double>(total_iters_) * start_factor_ + static_cast<double>(last_epoch_ - 1) * d));
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(base * (start_factor_ + (end_factor_ - start_factor_) *
                                              static_cast<double>(std::min(total_iters_, last_epoch_)) /
                                              static_cast<double>(total_iters_)));
  return lrs;
}

// ---- ConstantLR, PolynomialLR, LambdaLR, MultiplicativeLR --------------------------------------

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  if (factor > 1.0 || factor < 0)
    fail<ValueError>("[ConstantLR] Constant multiplicative factor expected to be between 0 and 1.");
  initialize(last_epoch);
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = group_values("lr");
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr = lr * (1.0 / factor_);
  }
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * (factor_ + (last_epoch_ >= total_iters_) * (1 - factor_)));
  return lrs;
}

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power, int64_t last_epoch)
    : LRScheduler(optimizer), total_iters_(total_iters), power_(power) {
  if (total_iters <= 0) fail<ValueError>("[PolynomialLR] total_iters must be positive, got ", total_iters);
  initialize(last_epoch);
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = group_values("lr");
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(total_iters_);
  const double decay = std::pow((1.0 - e / T) / (1.0 - (e - 1) / T), power_);
  for (double& lr : lrs) lr = lr * decay;
  return lrs;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  const double T = static_cast<double>(total_iters_);
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(base * std::pow(1.0 - static_cast<double>(std::min(total_iters_, last_epoch_)) / T, power_));
  return lrs;
}

namespace {

/** One function per group. */
std::vector<LRLambda> lambdas_per_group(std::vector<LRLambda> fns, const Optimizer& opt, const char* name) {
  const size_t n = opt.param_groups().size();
  if (fns.size() != n) fail<ValueError>("[", name, "] Expected ", n, " lr_lambdas, but got ", fns.size());
  for (const LRLambda& f : fns)
    if (!f) fail<TypeError>("[", name, "] lr_lambda should be a function, but got none");
  return fns;
}

}  // namespace

LambdaLR::LambdaLR(Optimizer& optimizer, const LRLambda& lr_lambda, int64_t last_epoch)
    : LambdaLR(optimizer, std::vector<LRLambda>(optimizer.param_groups().size(), lr_lambda), last_epoch) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(optimizer), lr_lambdas_(lambdas_per_group(std::move(lr_lambdas), optimizer, "LambdaLR")) {
  initialize(last_epoch);
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) lrs.push_back(base_lrs_[i] * lr_lambdas_[i](last_epoch_));
  return lrs;
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, const LRLambda& lr_lambda, int64_t last_epoch)
    : MultiplicativeLR(optimizer, std::vector<LRLambda>(optimizer.param_groups().size(), lr_lambda), last_epoch) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(optimizer), lr_lambdas_(lambdas_per_group(std::move(lr_lambdas), optimizer, "MultiplicativeLR")) {
  initialize(last_epoch);
}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs = group_values("lr");
  if (is_initial_) return lrs;
  for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = lrs[i] * lr_lambdas_[i](last_epoch_);
  return lrs;
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer),
      T_0_(T_0),
      T_mult_(T_mult),
      eta_min_(eta_min),
      T_i_(static_cast<double>(T_0)),
      T_cur_(static_cast<double>(last_epoch)) {
  if (T_0 <= 0) fail<ValueError>("[CosineAnnealingWarmRestarts] Expected positive integer T_0, but got ", T_0);
  if (T_mult < 1) fail<ValueError>("[CosineAnnealingWarmRestarts] Expected integer T_mult >= 1, but got ", T_mult);
  initialize(last_epoch);
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  constexpr double pi = std::numbers::pi;
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(pi * T_cur_ / T_i_)) / 2);
  return lrs;
}

void CosineAnnealingWarmRestarts::advance(std::optional<double> epoch) {
  if (!epoch && last_epoch_ < 0) epoch = 0.0;
  const double T_0 = static_cast<double>(T_0_), T_mult = static_cast<double>(T_mult_);
  if (!epoch) {
    epoch = static_cast<double>(last_epoch_ + 1);
    T_cur_ = T_cur_ + 1;
    if (T_cur_ >= T_i_) {
      T_cur_ = std::fmod(T_cur_, T_i_);
      T_i_ = T_i_ * T_mult;
    }
  } else if (*epoch < 0) {
    fail<ValueError>("[CosineAnnealingWarmRestarts] Expected non-negative epoch, but got ", *epoch);
  } else if (*epoch >= T_0) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(*epoch, T_0);
    } else {
      const auto n = static_cast<int64_t>(std::log(*epoch / T_0 * (T_mult - 1) + 1) / std::log(T_mult));
      const double grown = std::pow(T_mult, static_cast<double>(n));  // an integer, as torch's int power
      T_cur_ = *epoch - T_0 * (grown - 1) / (T_mult - 1);
      T_i_ = T_0 * grown;
    }
  } else {
    T_i_ = T_0;
    T_cur_ = *epoch;
  }
  last_epoch_ = static_cast<int64_t>(std::floor(*epoch));
  const std::vector<double> lrs = get_lr();
  auto& groups = opt_->param_groups();
  for (size_t i = 0; i < groups.size(); ++i) groups[i].lr() = lrs[i];
  last_lr_ = group_values("lr");
}

SchedulerState CosineAnnealingWarmRestarts::state_dict() const {
  SchedulerState s = LRScheduler::state_dict();
  s.insert("T_i", T_i_);
  s.insert("T_cur", T_cur_);
  return s;
}

void CosineAnnealingWarmRestarts::load_state_dict(const SchedulerState& state) {
  const double T_i = as_double(state, "T_i"), T_cur = as_double(state, "T_cur");
  LRScheduler::load_state_dict(state);
  T_i_ = T_i;
  T_cur_ = T_cur;
}

// ---- SchedulerList --------------------------------------------------------------------------

SchedulerList::SchedulerList(Optimizer& optimizer, const std::vector<std::shared_ptr<LRScheduler>>& schedulers,
                             const char* who)
    : LRScheduler(optimizer), schedulers_(schedulers) {
  if (schedulers_.empty()) fail<ValueError>("[", who, "] expects at least one scheduler, but got no scheduler.");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    if (!schedulers_[i]) fail<ValueError>("[", who, "] scheduler ", i, " is null");
    if (&schedulers_[i]->optimizer() != &optimizer)
      fail<ValueError>("[", who, "] expects all schedulers to belong to the same optimizer, but got scheduler ",
                       "at index ", i, " with another");
  }
}

SchedulerState SchedulerList::state_dict() const {
  SchedulerState out{{"_last_lr", last_lr_}};
  save_children(schedulers_, out);
  return out;
}

void SchedulerList::load_state_dict(const SchedulerState& state) {
  last_lr_ = as_list(state, "_last_lr", *opt_);
  load_children(schedulers_, state);
}

// ---- SequentialLR ---------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : SchedulerList(optimizer, schedulers, "SequentialLR"), milestones_(std::move(milestones)) {
  if (milestones_.size() != schedulers_.size() - 1)
    fail<ValueError>(
        "[SequentialLR] expects number of schedulers provided to be one more than the number of milestone "
        "points, but got number of schedulers ",
        schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = last_epoch + 1;
  for (ParamGroup& g : opt_->param_groups()) g.lr() = hyper_get<double>(g.options(), "initial_lr");
  base_lrs_ = group_values("initial_lr");
  // Undo the initial step each scheduler took when it was made, then take the first one's.
  auto undo = [](auto& self, LRScheduler& s) -> void {
    if (auto* seq = dynamic_cast<SequentialLR*>(&s)) {
      for (auto& child : seq->schedulers_) self(self, *child);
    } else {
      --s.last_epoch_;
    }
  };
  for (auto& s : schedulers_) undo(undo, *s);
  const int64_t idx = bisect_right(milestones_, 0);
  schedulers_[idx]->initial_step();
  last_lr_ = schedulers_[idx]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const int64_t idx = bisect_right(milestones_, last_epoch_);
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s.update_lr(0);
  else s.step();
  last_lr_ = s.get_last_lr();
}

SchedulerState SequentialLR::state_dict() const {
  SchedulerState out{{"last_epoch", static_cast<double>(last_epoch_)}};
  for (const auto& [key, value] : SchedulerList::state_dict()) out.insert(key, value);
  return out;
}

void SequentialLR::load_state_dict(const SchedulerState& state) {
  last_epoch_ = static_cast<int64_t>(as_double(state, "last_epoch"));
  SchedulerList::load_state_dict(state);
}

// ---- OneCycleLR -----------------------------------------------------------------------------

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleOptions o)
    : LRScheduler(optimizer), cycle_momentum_(o.cycle_momentum) {
  if (o.total_steps) {
    if (*o.total_steps <= 0)
      fail<ValueError>("[OneCycleLR] Expected positive integer total_steps, but got ", *o.total_steps);
    total_steps_ = *o.total_steps;
  } else if (o.epochs && o.steps_per_epoch) {
    if (*o.epochs <= 0) fail<ValueError>("[OneCycleLR] Expected positive integer epochs, but got ", *o.epochs);
    if (*o.steps_per_epoch <= 0)
      fail<ValueError>("[OneCycleLR] Expected positive integer steps_per_epoch, but got ", *o.steps_per_epoch);
    total_steps_ = *o.epochs * *o.steps_per_epoch;
  } else {
    fail<ValueError>("[OneCycleLR] You must define either total_steps OR (epochs AND steps_per_epoch)");
  }
  const double total = static_cast<double>(total_steps_);
  if (o.three_phase)
    phases_ = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {2 * o.pct_start * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  else
    phases_ = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  if (o.pct_start < 0 || o.pct_start > 1)
    fail<ValueError>("[OneCycleLR] Expected float between 0 and 1 pct_start, but got ", o.pct_start);
  if (o.anneal_strategy != "cos" && o.anneal_strategy != "linear")
    fail<ValueError>("[OneCycleLR] anneal_strategy must be one of 'cos' or 'linear', instead got ", o.anneal_strategy);
  cos_ = o.anneal_strategy == "cos";
  auto& groups = opt_->param_groups();
  const std::vector<double> max_lrs = per_group("max_lr", *opt_, max_lr);
  if (o.last_epoch == -1)
    for (size_t i = 0; i < groups.size(); ++i) {
      Hyper& h = groups[i].options();
      h.insert("initial_lr", max_lrs[i] / o.div_factor);
      h.insert("max_lr", max_lrs[i]);
      h.insert("min_lr", hyper_get<double>(h, "initial_lr") / o.final_div_factor);
    }
  if (cycle_momentum_) {
    if (!opt_->defaults().contains("momentum") && !opt_->defaults().contains("betas"))
      fail<ValueError>("[OneCycleLR] optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
    use_beta1_ = opt_->defaults().contains("betas");
    const std::vector<double> max_m = per_group("max_momentum", *opt_, o.max_momentum);
    const std::vector<double> base_m = per_group("base_momentum", *opt_, o.base_momentum);
    if (o.last_epoch == -1)
      for (size_t i = 0; i < groups.size(); ++i) {
        Hyper& h = groups[i].options();
        if (use_beta1_) h.insert("betas", std::pair{max_m[i], hyper_get<std::pair<double, double>>(h, "betas").second});
        else h.insert("momentum", max_m[i]);
        h.insert("max_momentum", max_m[i]);
        h.insert("base_momentum", base_m[i]);
      }
  }
  initialize(o.last_epoch);
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (cos_) {
    const double cos_out = std::cos(std::numbers::pi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  if (step_num > total_steps_)
    fail<ValueError>("[OneCycleLR] Tried to step ", step_num, " times. The specified number of total steps is ",
                     total_steps_);
  std::vector<double> lrs;
  for (ParamGroup& g : opt_->param_groups()) {
    Hyper& h = g.options();
    double start_step = 0.0, lr = 0.0, momentum = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (static_cast<double>(step_num) <= ph.end_step || i == phases_.size() - 1) {
        const double pct = (static_cast<double>(step_num) - start_step) / (ph.end_step - start_step);
        lr = anneal(hyper_get<double>(h, ph.start_lr), hyper_get<double>(h, ph.end_lr), pct);
        if (cycle_momentum_)
          momentum = anneal(hyper_get<double>(h, ph.start_momentum), hyper_get<double>(h, ph.end_momentum), pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (cycle_momentum_) {
      if (use_beta1_) h.insert("betas", std::pair{momentum, hyper_get<std::pair<double, double>>(h, "betas").second});
      else h.insert("momentum", momentum);
    }
  }
  return lrs;
}

// ---- CyclicLR -------------------------------------------------------------------------------

CyclicLR::CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr, CyclicLROptions o)
    : LRScheduler(optimizer), o_(std::move(o)) {
  const std::vector<double> base_lrs = per_group("base_lr", *opt_, base_lr);
  auto& groups = opt_->param_groups();
  if (o_.last_epoch == -1)
    for (size_t i = 0; i < groups.size(); ++i) groups[i].lr() = base_lrs[i];
  max_lrs_ = per_group("max_lr", *opt_, max_lr);
  const double down = o_.step_size_down ? *o_.step_size_down : o_.step_size_up;
  total_size_ = o_.step_size_up + down;
  step_ratio_ = o_.step_size_up / total_size_;
  if (o_.mode != "triangular" && o_.mode != "triangular2" && o_.mode != "exp_range" && !o_.scale_fn)
    fail<ValueError>("[CyclicLR] mode is invalid and scale_fn is None");
  if (!o_.scale_fn) o_.scale_mode = o_.mode == "exp_range" ? "iterations" : "cycle";
  if (o_.cycle_momentum) {
    if (!opt_->defaults().contains("momentum") && !opt_->defaults().contains("betas"))
      fail<ValueError>("[CyclicLR] optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
    use_beta1_ = opt_->defaults().contains("betas");
    base_momentums_ = per_group("base_momentum", *opt_, o_.base_momentum);
    max_momentums_ = per_group("max_momentum", *opt_, o_.max_momentum);
    if (o_.last_epoch == -1)
      for (size_t i = 0; i < groups.size(); ++i) {
        Hyper& h = groups[i].options();
        if (use_beta1_) h.insert("betas", std::pair{max_momentums_[i], hyper_get<Betas>(h, "betas").second});
        else h.insert("momentum", max_momentums_[i]);
        h.insert("max_momentum", max_momentums_[i]);
        h.insert("base_momentum", base_momentums_[i]);
      }
  }
  initialize(o_.last_epoch);
  base_lrs_ = base_lrs;  // as torch: after the initial step, which read the groups' initial_lr
}

double CyclicLR::scale(double x) const {
  if (o_.scale_fn) return o_.scale_fn(x);
  if (o_.mode == "triangular") return 1.0;
  if (o_.mode == "triangular2") return 1 / std::pow(2.0, x - 1);
  return std::pow(o_.gamma, x);
}

std::vector<double> CyclicLR::get_lr() {
  const double epoch = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1 + epoch / total_size_);
  const double x = 1.0 + epoch / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  const double s = scale(o_.scale_mode == "cycle" ? cycle : epoch);
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i)
    lrs.push_back(base_lrs_[i] + (max_lrs_[i] - base_lrs_[i]) * scale_factor * s);
  if (o_.cycle_momentum) {
    auto& groups = opt_->param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double base_height = (max_momentums_[i] - base_momentums_[i]) * scale_factor;
      const double momentum = max_momentums_[i] - base_height * s;
      Hyper& h = groups[i].options();
      if (use_beta1_) h.insert("betas", std::pair{momentum, hyper_get<Betas>(h, "betas").second});
      else h.insert("momentum", momentum);
    }
  }
  return lrs;
}

// ---- ChainedScheduler -----------------------------------------------------------------------

Optimizer& ChainedScheduler::first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  if (schedulers.empty() || !schedulers[0])
    fail<ValueError>("[ChainedScheduler] expects at least one scheduler to be chained, but got no scheduler.");
  return schedulers[0]->optimizer();
}

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers, Optimizer* optimizer)
    : SchedulerList(optimizer ? *optimizer : first_optimizer(schedulers), schedulers, "ChainedScheduler") {
  last_lr_ = group_values("lr");
}

void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  last_lr_ = group_values("lr");
}

// ---- ReduceLROnPlateau ----------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : opt_(&optimizer), o_(std::move(options)) {
  if (o_.factor >= 1.0) fail<ValueError>("[ReduceLROnPlateau] Factor should be < 1.0.");
  if (o_.mode != "min" && o_.mode != "max") fail<ValueError>("[ReduceLROnPlateau] mode ", o_.mode, " is unknown!");
  if (o_.threshold_mode != "rel" && o_.threshold_mode != "abs")
    fail<ValueError>("[ReduceLROnPlateau] threshold mode ", o_.threshold_mode, " is unknown!");
  if (o_.min_lr.size() != 1 && o_.min_lr.size() != opt_->param_groups().size())
    fail<ValueError>("[ReduceLROnPlateau] expected ", opt_->param_groups().size(), " min_lrs, got ", o_.min_lr.size());
  min_lrs_ = per_group("min_lr", *opt_, o_.min_lr);
  for (const ParamGroup& g : opt_->param_groups()) last_lr_.push_back(g.lr());
  best_ = o_.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (o_.mode == "min" && o_.threshold_mode == "rel") return a < best * (1.0 - o_.threshold);
  if (o_.mode == "min") return a < best - o_.threshold;
  if (o_.threshold_mode == "rel") return a > best * (o_.threshold + 1.0);
  return a > best + o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  auto& groups = opt_->param_groups();
  if (num_bad_epochs_ > o_.patience) {
    if (min_lrs_.size() != groups.size()) {
      if (o_.min_lr.size() != 1)
        fail<ValueError>("[ReduceLROnPlateau] the number of param groups in the optimizer (", groups.size(),
                         ") differs from when it was initialized (", min_lrs_.size(), ")");
      min_lrs_.assign(groups.size(), o_.min_lr[0]);
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].lr();
      const double new_lr = std::max(old_lr * o_.factor, min_lrs_[i]);
      if (old_lr - new_lr > o_.eps) groups[i].lr() = new_lr;
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const ParamGroup& g : groups) last_lr_.push_back(g.lr());
}

SchedulerState ReduceLROnPlateau::state_dict() const {
  return {{"last_epoch", static_cast<double>(last_epoch_)},
          {"best", best_},
          {"num_bad_epochs", static_cast<double>(num_bad_epochs_)},
          {"cooldown_counter", static_cast<double>(cooldown_counter_)},
          {"min_lrs", min_lrs_},
          {"_last_lr", last_lr_}};
}

void ReduceLROnPlateau::load_state_dict(const SchedulerState& state) {
  // All read (and checked) before any is set.
  std::vector<double> min_lrs = as_list(state, "min_lrs", *opt_), last_lr = as_list(state, "_last_lr", *opt_);
  const double last_epoch = as_double(state, "last_epoch"), best = as_double(state, "best");
  const double num_bad_epochs = as_double(state, "num_bad_epochs"), cooldown = as_double(state, "cooldown_counter");
  last_epoch_ = static_cast<int64_t>(last_epoch);
  best_ = best;
  num_bad_epochs_ = static_cast<int64_t>(num_bad_epochs);
  cooldown_counter_ = static_cast<int64_t>(cooldown);
  min_lrs_ = std::move(min_lrs);
  last_lr_ = std::move(last_lr);
}

// ---- SWALR ----------------------------------------------------------------------------------

SWALR::SWALR(Optimizer& optimizer, const std::vector<double>& swa_lr, int64_t anneal_epochs,
             const std::string& anneal_strategy, int64_t last_epoch)
    : LRScheduler(optimizer), anneal_epochs_(anneal_epochs), anneal_strategy_(anneal_strategy) {
  const std::vector<double> swa_lrs = per_group("swa_lr", *opt_, swa_lr);
  auto& groups = opt_->param_groups();
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().insert("swa_lr", swa_lrs[i]);
  if (anneal_strategy != "cos" && anneal_strategy != "linear")
    fail<ValueError>("[SWALR] anneal_strategy must be one of 'cos' or 'linear', instead got ", anneal_strategy);
  if (anneal_epochs < 0) fail<ValueError>("[SWALR] anneal_epochs must be equal or greater than 0, got ", anneal_epochs);
  initialize(last_epoch);
}

double SWALR::anneal(double t) const {
  return anneal_strategy_ == "cos" ? (1 - std::cos(std::numbers::pi * t)) / 2 : t;
}

std::vector<double> SWALR::get_lr() {
  // torch's: the lr before annealing is recovered from the current one at the previous step's
  // alpha, so a change made to the group's lr between steps carries on.
  int64_t step = step_count_ - 1;
  if (anneal_epochs_ == 0) step = std::max<int64_t>(1, step);
  const double span = static_cast<double>(std::max<int64_t>(1, anneal_epochs_));
  const double prev_alpha = anneal(std::clamp(static_cast<double>(step - 1) / span, 0.0, 1.0));
  const double alpha = anneal(std::clamp(static_cast<double>(step) / span, 0.0, 1.0));
  std::vector<double> lrs = group_values("lr");
  const std::vector<double> swa_lrs = group_values("swa_lr");
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double prev = prev_alpha == 1 ? swa_lrs[i] : (lrs[i] - prev_alpha * swa_lrs[i]) / (1 - prev_alpha);
    lrs[i] = swa_lrs[i] * alpha + prev * (1 - alpha);
  }
  return lrs;
}

SchedulerState SWALR::state_dict() const {
  SchedulerState s = LRScheduler::state_dict();
  s.insert("anneal_epochs", static_cast<double>(anneal_epochs_));
  return s;
}

void SWALR::load_state_dict(const SchedulerState& state) {
  const double anneal_epochs = as_double(state, "anneal_epochs");
  LRScheduler::load_state_dict(state);
  anneal_epochs_ = static_cast<int64_t>(anneal_epochs);
}

}  // namespace ug::optim::lr_scheduler
