// Learning-rate schedules, torch.optim.lr_scheduler: each step() sets the lr of every
// parameter group of an optimizer. They follow torch's chainable forms (each lr computed from
// the group's current lr), so they compose with each other and with manual changes exactly as
// torch's do. A scheduler refers to its optimizer, which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ug/optim/optimizer.h"

namespace ug::optim::lr_scheduler {

/** A scheduler's state: its counters and learning-rate lists by name ("last_epoch", ...). */
using SchedulerState = OrderedDict<std::variant<double, std::vector<double>>>;

/** Whether a state entry counts (last_epoch, _step_count, num_bad_epochs, cooldown_counter):
 *  an int in torch's state_dict, where the other numbers are floats. */
bool is_counter(const std::string& key);

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /** Advances one epoch (or iteration) and sets the groups' learning rates. */
  virtual void step();
  /** The learning rates set by the last step, one per group. */
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *opt_; }
  virtual SchedulerState state_dict() const;
  virtual void load_state_dict(const SchedulerState& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer) : opt_(&optimizer) {}
  /** torch's LRScheduler.__init__, run at the end of a subclass's constructor: records the
   *  base learning rates ("initial_lr") and takes the initial step. */
  void initialize(int64_t last_epoch);
  /** The next learning rates from the current ones (the chainable form). */
  virtual std::vector<double> get_lr() = 0;
  /** The learning rates at last_epoch from the base ones, where a closed form exists. */
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  /** torch's _update_lr: next epoch (or jump to `epoch`), then set the groups' lr. */
  void update_lr(std::optional<int64_t> epoch = std::nullopt);
  /** torch's _initial_step. */
  void initial_step();
  std::vector<double> group_values(const std::string& key) const;

  Optimizer* opt_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool is_initial_ = false;
  std::vector<double> base_lrs_, last_lr_;

  friend class SequentialLR;
};

/** The schedulers' argument defaults (torch's), stated once: the constructors below and the
 *  Python binding read them. */
struct SchedulerDefaults {
  static constexpr double gamma = 0.1;
  static constexpr double eta_min = 0.0;
  static constexpr double start_factor = 1.0 / 3, end_factor = 1.0;
  static constexpr int64_t total_iters = 5;
  static constexpr int64_t last_epoch = -1;
};

/** lr *= gamma every step_size epochs. */
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = SchedulerDefaults::gamma,
         int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/** lr *= gamma at each milestone epoch (a milestone listed twice counts twice). */
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = SchedulerDefaults::gamma,
              int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

/** lr *= gamma every epoch. */
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double gamma_;
};

/** Half a cosine from the base lr down to eta_min over T_max epochs (then back up). */
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = SchedulerDefaults::eta_min,
                    int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/** The lr factor goes linearly from start_factor to end_factor over total_iters epochs. */
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = SchedulerDefaults::start_factor,
           double end_factor = SchedulerDefaults::end_factor, int64_t total_iters = SchedulerDefaults::total_iters,
           int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/** lr * factor until total_iters epochs have passed, then the lr itself. */
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = SchedulerDefaults::start_factor,
             int64_t total_iters = SchedulerDefaults::total_iters, int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double factor_;
  int64_t total_iters_;
};

/** lr * (1 - epoch / total_iters)^power, reaching 0 at total_iters and staying there. */
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = SchedulerDefaults::total_iters, double power = 1.0,
               int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t total_iters_;
  double power_;
};

/** Cosine from the base lr to eta_min over T_i epochs, then a restart, T_i growing by T_mult
 *  each time (SGDR). step(epoch) jumps to a (fractional) epoch, as torch's. */
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1,
                              double eta_min = SchedulerDefaults::eta_min,
                              int64_t last_epoch = SchedulerDefaults::last_epoch);
  void step() override { advance(std::nullopt); }
  void step(double epoch) { advance(epoch); }
  SchedulerState state_dict() const override;
  void load_state_dict(const SchedulerState& state) override;

 protected:
  std::vector<double> get_lr() override;

 private:
  void advance(std::optional<double> epoch);
  int64_t T_0_, T_mult_;
  double eta_min_;
  double T_i_, T_cur_;
};

/** A function of the epoch. */
using LRLambda = std::function<double(int64_t epoch)>;

/** lr = base lr * lr_lambda(epoch). */
class LambdaLR : public LRScheduler {
 public:
  /** One function for every group. */
  LambdaLR(Optimizer& optimizer, const LRLambda& lr_lambda, int64_t last_epoch = SchedulerDefaults::last_epoch);
  /** One function per group. */
  LambdaLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas, int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<LRLambda> lr_lambdas_;
};

/** lr *= lr_lambda(epoch) every epoch after the first. */
class MultiplicativeLR : public LRScheduler {
 public:
  /** One function for every group. */
  MultiplicativeLR(Optimizer& optimizer, const LRLambda& lr_lambda, int64_t last_epoch = SchedulerDefaults::last_epoch);
  /** One function per group. */
  MultiplicativeLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas,
                   int64_t last_epoch = SchedulerDefaults::last_epoch);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<LRLambda> lr_lambdas_;
};

/** A scheduler made of schedulers of one optimizer (SequentialLR, ChainedScheduler): its lr is
 *  what they leave, and its state holds theirs, under "_schedulers.<i>.". */
class SchedulerList : public LRScheduler {
 public:
  SchedulerState state_dict() const override;
  void load_state_dict(const SchedulerState& state) override;
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 protected:
  /** Checks that each scheduler is there and steps `optimizer` (`who` names the class). */
  SchedulerList(Optimizer& optimizer, const std::vector<std::shared_ptr<LRScheduler>>& schedulers, const char* who);
  std::vector<double> get_lr() override { return last_lr_; }

  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

/** Runs schedulers one after another, switching at the milestone epochs (warm-up, then decay). */
class SequentialLR : public SchedulerList {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = SchedulerDefaults::last_epoch);
  void step() override;
  SchedulerState state_dict() const override;
  void load_state_dict(const SchedulerState& state) override;

 private:
  std::vector<int64_t> milestones_;
};

/** The 1cycle policy: lr rises from max_lr/div_factor to max_lr, then anneals (cos or linear)
 *  to initial_lr/final_div_factor; momentum (or Adam's beta1) cycles the other way. */
struct OneCycleOptions {
  std::optional<int64_t> total_steps, epochs, steps_per_epoch;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";
  bool cycle_momentum = true;
  std::vector<double> base_momentum = {0.85}, max_momentum = {0.95};  // one value, or one per group
  double div_factor = 25.0, final_div_factor = 1e4;
  bool three_phase = false;
  int64_t last_epoch = -1;
};

class OneCycleLR : public LRScheduler {
 public:
  /** max_lr: one value, or one per group. */
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleOptions options = {});
  int64_t total_steps() const { return total_steps_; }

 protected:
  std::vector<double> get_lr() override;

 private:
  struct Phase {
    double end_step;
    const char *start_lr, *end_lr, *start_momentum, *end_momentum;
  };
  double anneal(double start, double end, double pct) const;
  int64_t total_steps_;
  std::vector<Phase> phases_;
  bool cos_, cycle_momentum_, use_beta1_ = false;
};

/** Cyclical learning rates: each group's lr goes between base_lr and max_lr in triangles of
 *  step_size_up + step_size_down iterations, their height scaled per cycle (triangular: 1,
 *  triangular2: halved each cycle, exp_range: gamma^iteration, or scale_fn); momentum (or
 *  Adam's beta1) cycles the other way between max_momentum and base_momentum. */
struct CyclicLROptions {
  double step_size_up = 2000;
  std::optional<double> step_size_down;  // default: step_size_up
  std::string mode = "triangular";       // "triangular", "triangular2" or "exp_range"
  double gamma = 1.0;
  std::function<double(double)> scale_fn;  // set: used in place of mode's, with scale_mode
  std::string scale_mode = "cycle";        // "cycle" or "iterations"; set by mode unless scale_fn
  bool cycle_momentum = true;
  std::vector<double> base_momentum = {0.8}, max_momentum = {0.9};  // one value, or one per group
  int64_t last_epoch = -1;
};

class CyclicLR : public LRScheduler {
 public:
  /** base_lr, max_lr: one value, or one per group. */
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr, CyclicLROptions options = {});

 protected:
  std::vector<double> get_lr() override;

 private:
  double scale(double x) const;
  CyclicLROptions o_;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  double total_size_, step_ratio_;
  bool use_beta1_ = false;
};

/** Steps every scheduler in turn at each step(), their effects composed (torch's
 *  ChainedScheduler); the lr is what the last one leaves. */
class ChainedScheduler : public SchedulerList {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers, Optimizer* optimizer = nullptr);
  void step() override;

 private:
  static Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers);
};

/** Cuts the lr by `factor` when a metric has stopped improving for `patience` epochs. */
struct ReduceLROnPlateauOptions {
  std::string mode = "min";
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";
  int64_t cooldown = 0;
  std::vector<double> min_lr = {0.0};  // one value, or one per group
  double eps = 1e-8;
};

class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  Optimizer& optimizer() const { return *opt_; }
  SchedulerState state_dict() const;
  void load_state_dict(const SchedulerState& state);

 private:
  bool is_better(double a, double best) const;
  Optimizer* opt_;
  ReduceLROnPlateauOptions o_;
  std::vector<double> min_lrs_, last_lr_;
  double best_;
  int64_t last_epoch_ = 0, cooldown_counter_ = 0, num_bad_epochs_ = 0;
};

/** torch.optim.swa_utils.SWALR: anneals each group's lr to its swa_lr (one value, or one per
 *  group, kept in the group as "swa_lr") over anneal_epochs epochs, by "cos" or "linear", then
 *  holds it there. For stochastic weight averaging, with swa_utils' AveragedModel. */
class SWALR : public LRScheduler {
 public:
  SWALR(Optimizer& optimizer, const std::vector<double>& swa_lr, int64_t anneal_epochs = 10,
        const std::string& anneal_strategy = "cos", int64_t last_epoch = SchedulerDefaults::last_epoch);
  int64_t anneal_epochs() const { return anneal_epochs_; }
  const std::string& anneal_strategy() const { return anneal_strategy_; }
  SchedulerState state_dict() const override;
  void load_state_dict(const SchedulerState& state) override;

 protected:
  std::vector<double> get_lr() override;

 private:
  double anneal(double t) const;
  int64_t anneal_epochs_;
  std::string anneal_strategy_;
};

}  // namespace ug::optim::lr_scheduler
