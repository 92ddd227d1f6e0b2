// ug::train::Trainer: Keras's compile / fit / evaluate / predict for any ug::nn::Module.
//
// Keras puts these on its Model class; here every Module is already a model, so the loops and
// the state compile() sets up (optimizer, loss, metrics, clipping, accumulation) live in a
// Trainer built around one. Python's model.compile(...) makes one and keeps it on the model.
//
//   train::Trainer trainer(model);
//   trainer.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
//   auto history = trainer.fit(train_batches, {.epochs = 5, .validation_data = &val_batches});
//   trainer.fit(x, y, {.epochs = 5, .batch_size = 64, .validation_split = 0.1});  // tensors, as Keras
//
// One training step is exactly the hand-written loop `loss = loss_fn(model(x), y);
// loss.backward(); opt.step(); opt.zero_grad()`, so fit reaches bit-identical parameters.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ug/data/dataset.h"
#include "ug/distributed/process_group.h"
#include "ug/train/keras_losses.h"
#include "ug/nn/module.h"
#include "ug/ops/autocast.h"
#include "ug/optim/grad_scaler.h"
#include "ug/optim/optimizer.h"
#include "ug/train/callback.h"
#include "ug/train/losses.h"
#include "ug/train/metrics.h"
#include "ug/train/progress.h"
#include "ug/train/strategy.h"

namespace ug::distributed {
class DistributedDataParallelImpl;
}  // namespace ug::distributed

namespace ug::train {

/** A training step as a function of (x, y) -> (output, loss), and what compiles one: given the
 *  step and the named tensors it reads that change between its calls without being written
 *  by it (the loss scale, when the optimizer steps outside the step), read live at each call. */
using StepFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using StepCompiler = std::function<StepFunction(StepFunction, const std::vector<std::pair<std::string, Tensor>>& live)>;

/** A loss as compile() takes it: a Keras loss name (losses.h), loss(output, target), or a Keras
 *  loss object. */
using LossSpec = std::variant<std::string, LossFn, KerasLoss>;

struct CompileOptions {
  /** "adam", "adamw", "sgd", "rmsprop" or "adagrad": Keras's optimizer of that name
   *  (optim::keras: Keras's defaults and update rules) over the parameters that require grad;
   *  or an optimizer (a Keras one given unbuilt is built at the first step). Keras's default
   *  is rmsprop. */
  std::variant<std::string, std::shared_ptr<optim::Optimizer>> optimizer = std::string("rmsprop");
  /** The lr of an optimizer given by name; without it Keras's default for that optimizer
   *  (adam, adamw, rmsprop, adagrad 1e-3; sgd 0.01). */
  std::optional<double> learning_rate;
  /** A Keras loss name (losses.h), loss(output, target), or a Keras loss object (which reduces
   *  sample-weighted losses by its own reduction). Required. */
  LossSpec loss;
  /** A model of several outputs (nn::Functional): a loss per output, in output order, instead
   *  of `loss` for all of them (an empty name or function: that output trains no loss). */
  std::vector<LossSpec> losses;
  /** Keras's loss_weights: the total loss is sum(weight * loss) over the outputs (1 each when empty). */
  std::vector<double> loss_weights;
  /** Whether a named loss reads logits; when unset, the rule in losses.h decides. */
  std::optional<bool> from_logits;
  /** Reported in the logs under their names, validation ones with "val_" in front. */
  std::vector<Metric> metrics;
  /** A model of several outputs: metrics per output (in output order), logged as
   *  "<output name>_<metric>" (Keras's names), instead of `metrics`. */
  std::vector<std::vector<Metric>> output_metrics;
  /** Keras's clipping, at most one of them: each gradient's norm, every element, or the
   *  joint norm of all gradients (torch's clip_grad_norm_) is clipped before the step. */
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  /** Sums the gradients of this many batches (each loss divided by it) before one step: with
   *  a mean loss and equal batches, the step of one batch this many times larger. */
  int64_t gradient_accumulation_steps = 1;
  /** Keras's jit_compile: fit's training step (forward, loss, backward and, without
   *  accumulation, the optimizer's step and the loss scale's update) runs as the step this makes of it,
   *  from the second step on. The compiler layer, above this one, gives it:
   *  ug::jit_step_compiler() (ug/compiler/jit.h); Python's jit_compile=True. */
  StepCompiler jit_compile;
  /** Trains data-parallel under this strategy (strategy.h); unset: the strategy whose scope
   *  is open when compile runs, if any. */
  std::shared_ptr<const MirroredStrategy> strategy;
};

struct FitOptions {
  /** Trains epochs initial_epoch .. epochs - 1. */
  int64_t epochs = 1;
  int64_t initial_epoch = 0;
  /** Evaluated after each epoch; its metrics are logged as "val_loss", "val_accuracy"... */
  data::BatchSource* validation_data = nullptr;
  /** Keras's validation_freq: validates after every this many epochs (counted from 1), only. */
  int64_t validation_freq = 1;
  std::vector<std::shared_ptr<Callback>> callbacks;
  /** 0 silent, 1 a progress bar (a line per epoch when the output is not a terminal), 2 a line per epoch. */
  int verbose = 1;
  /** At most this many batches per epoch (each epoch restarts the source); -1 for all. */
  int64_t steps_per_epoch = -1;
  // Keras's options for fit(x, y, ...) on tensors (a batch source is batched already).
  /** Samples per batch; 32 when unset. Under a strategy, the global batch (as TensorFlow's):
   *  each of the N replicas takes batch_size / N samples of it. */
  std::optional<int64_t> batch_size;
  /** Reshuffles the training samples each epoch (draws from the global generator: manual_seed fixes it). */
  bool shuffle = true;
  /** Holds out the samples from floor(n * (1 - validation_split)) on, in [0, 1), as validation data, taken before
   *  shuffling; not together with validation_data. */
  double validation_split = 0;
  /** Keras's sample_weight: one weight per sample of x (dim 0), split with validation_split:
   *  one tensor weighing every output's loss, or one per output (Keras's list for a model of
   *  several outputs). Each batch's loss is then sum(weight * per-sample loss) / batch size
   *  (Keras's "sum_over_batch_size"); metrics stay unweighted, as Keras's compile(metrics=...).
   *  A batch source gives weights as the last fields of its batches, (x, y, sample_weight). */
  std::vector<Tensor> sample_weight;
  /** Keras's class_weight: each training sample weighs class_weight[its class] (1 for a class
   *  not named), its class being y's value, or y's argmax for one-hot [N, C] targets. Not
   *  together with sample weights. */
  std::map<int64_t, double> class_weight;
};

/** What a running fit tells its callbacks (Keras's callback.params). */
struct FitParams {
  int64_t epochs = 0;
  /** Batches per epoch, -1 when unknown. */
  int64_t steps = -1;
  int verbose = 0;
};

class Trainer {
 public:
  explicit Trainer(std::shared_ptr<nn::Module> module);
  template <class Holder, class = decltype(std::declval<Holder>().ptr())>
  explicit Trainer(const Holder& holder) : Trainer(std::static_pointer_cast<nn::Module>(holder.ptr())) {}

  void compile(CompileOptions options);
  bool compiled() const { return static_cast<bool>(loss_); }

  /** Trains on `train` (batches {x, y}); returns the per-epoch logs. The module is in train
   *  mode during fit (its previous mode is restored after) and in eval mode for validation.
   *  Under a strategy each rank reads its own batches from `train` (shard it, e.g. with a
   *  DataLoader over a data::DistributedSampler: fit calls start_epoch(epoch), which sets the
   *  sampler's epoch), and every rank must take the same number of steps. */
  std::shared_ptr<History> fit(data::BatchSource& train, FitOptions options = {});
  /** Keras's fit(x, y): batches of options.batch_size samples of x and y (dim 0), with
   *  options.shuffle and options.validation_split. Under a strategy each rank trains on its
   *  shard (a DistributedSampler per epoch, the shuffle seeded from rank 0's generator). */
  std::shared_ptr<History> fit(const Tensor& x, const Tensor& y, FitOptions options = {});
  /** The loss and metrics over one pass, averaged over samples, in eval mode without autograd.
   *  Under a strategy, over every rank's batches (one all_reduce at the end of the pass), so a
   *  source sharded per rank gives the figures of the whole set, and every rank the same. */
  Logs evaluate(data::BatchSource& data, int verbose = 1);
  /** Keras's evaluate(x, y): batches of batch_size samples; under a strategy batch_size is the
   *  global batch and each rank evaluates its own contiguous share of the samples. */
  Logs evaluate(const Tensor& x, const Tensor& y, int64_t batch_size = 32, int verbose = 1,
                const Tensor& sample_weight = {});
  /** The batches evaluate(x, y) and fit's validation read (with sample_weight, (x, y, weight)
   *  batches): all of them, or under a strategy this rank's share (batch_size / N samples per
   *  batch; a rank may have none). */
  std::unique_ptr<data::BatchSource> evaluation_batches(const Tensor& x, const Tensor& y, int64_t batch_size,
                                                        const Tensor& sample_weight = {}) const;
  /** The outputs for every batch's first field, concatenated along dim 0, in eval mode without autograd. */
  Tensor predict(data::BatchSource& data, int verbose = 0);
  Tensor predict(const Tensor& x, int64_t batch_size = 32, int verbose = 0);

  // A model of several inputs or outputs (nn::Functional, Keras's functional Model): batches
  // hold the inputs, then the targets (one per output, in output order), then optionally the
  // sample weights: one weighing every output's loss, or one per output. The logs hold "loss" (the weighted sum),
  // with several outputs "<output>_loss" for each, and the metrics as "<output>_<metric>".
  std::shared_ptr<History> fit(const std::vector<Tensor>& x, const std::vector<Tensor>& y, FitOptions options = {});
  Logs evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& y, int64_t batch_size = 32, int verbose = 1,
                const std::vector<Tensor>& sample_weight = {});
  std::unique_ptr<data::BatchSource> evaluation_batches(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                                        int64_t batch_size,
                                                        const std::vector<Tensor>& sample_weight = {}) const;
  /** Each output for every batch's inputs (its first fields), concatenated along dim 0. */
  std::vector<Tensor> predict_all(data::BatchSource& data, int verbose = 0);
  std::vector<Tensor> predict_all(const std::vector<Tensor>& x, int64_t batch_size = 32, int verbose = 0);
  /** The model's inputs and outputs: nn::Functional's, 1 and 1 for any other module. */
  int64_t num_inputs() const { return num_inputs_; }
  int64_t num_outputs() const { return static_cast<int64_t>(output_names_.size()); }
  const std::vector<std::string>& output_names() const { return output_names_; }

  nn::Module& module() const { return *module_; }
  /** The optimizer compile() set up (throws before compile). */
  optim::Optimizer& optimizer() const;
  /** The first parameter group's lr; set_learning_rate sets every group's. */
  double learning_rate() const;
  void set_learning_rate(double lr);
  const FitParams& params() const { return params_; }
  /** The loss scaling compile() set up under the "mixed_float16" policy, else null (Keras's
   *  LossScaleOptimizer); give it to a Checkpoint to resume bit-identically. */
  amp::GradScaler* loss_scaler() const { return scaler_.get(); }

  /** The strategy compile() found, or null. */
  const std::shared_ptr<const MirroredStrategy>& strategy() const { return strategy_; }
  /** The strategy's group (null without one): checkpoints saved with it are collective. */
  distributed::ProcessGroupPtr process_group() const;
  /** This process's rank under the strategy, 0 without one: only rank 0 prints and writes. */
  int rank() const;

  /** Set by a callback (EarlyStopping) to end fit after the current batch. */
  bool stop_training = false;

  /** Where progress and callbacks' messages go: stdout unless set. */
  void set_output(Output out) { output_ = std::move(out); }
  const Output& output() const { return output_; }

 private:
  struct Pass;
  /** A batch split into the model's inputs, its targets and the sample weights (none, one for
   *  every output, or one per output). */
  struct Fields {
    std::vector<Tensor> x, y, weights;
  };
  Fields split_batch(const data::Example& batch, const char* who) const;
  /** Arrays for fit / evaluate: one per input, one target per output. */
  void check_arrays(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const char* who) const;
  /** The model's outputs: its forward on one input, nn::Functional's forward_all on several. */
  std::vector<Tensor> run_model(nn::Module& m, const std::vector<Tensor>& x);
  void check_compiled(const char* who) const;
  /** Keras's optimizer named in compile, built on the parameters that require grad. */
  std::shared_ptr<optim::Optimizer> make_named_optimizer(double lr) const;
  /** Before the first step: remakes a named optimizer when lazily sized layers have since
   *  made their parameters, and builds a Keras optimizer given unbuilt. */
  void refresh_named_optimizer();
  /** Adds one batch's loss (read once) and metrics to `pass`; with `global`, those of every
   *  replica's batch (one all_reduce), so every rank logs the same figures. */
  void record(Pass& pass, const std::vector<Tensor>& outputs, const std::vector<Tensor>& losses,
              const std::vector<Tensor>& targets, int64_t batch_size, bool global = false);
  /** The module a training step calls: the DistributedDataParallel wrapper under a strategy
   *  (made at the first batch, once lazily sized layers have their parameters), else the module. */
  nn::Module& step_module(const Tensor& x);
  /** The running means: "loss" and each metric. */
  Logs pass_logs(const Pass& pass) const;
  /** Scales the accumulated gradients when fewer than k batches went into them, clips, steps. */
  void apply_gradients(int64_t accumulated);
  /** The batch's loss; with weights (Fields::weights'), sum(weight * per-sample loss) / batch
   *  size. With several outputs: {the weighted sum, each output's loss}. */
  std::vector<Tensor> compute_loss(const std::vector<Tensor>& outputs, const std::vector<Tensor>& y,
                                   const std::vector<Tensor>& weights, const char* who) const;
  Tensor output_loss(size_t output, const Tensor& out, const Tensor& y, const Tensor& weight, const char* who) const;
  /** One batch: forward, loss, backward (of loss / k), and with step_inside the optimizer's
   *  step: {outputs..., losses...} (compute_loss's). */
  std::vector<Tensor> batch_step(const Fields& batch, bool step_inside);
  /** Whether batch_step takes the optimizer's step itself (one batch per step); a compiled step
   *  then holds the loss scale's update too. */
  bool step_inside() const { return options_.gradient_accumulation_steps == 1; }
  Logs run_evaluation(data::BatchSource& data, int verbose, const char* who);
  /** pass_logs over every replica's batches of an evaluation pass (one all_reduce). */
  Logs global_pass_logs(const Pass& pass) const;
  /** Opens the mixed-precision policy's autocast region (none under a float32 policy). */
  void enter_autocast(std::optional<AutocastGuard>& region, const Tensor& x) const;

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::string optimizer_name_;  // when made by name
  bool stepped_ = false;
  LossFn loss_;
  // Per output: the loss (null: none), the named loss per sample for sample weights (null for
  // a loss function), the Keras loss object given (which weighs samples itself), its weight.
  std::vector<LossFn> losses_, sample_losses_;
  std::vector<std::optional<KerasLoss>> keras_losses_;
  std::vector<double> loss_weights_;
  std::vector<Metric> metrics_;         // named as logged
  std::vector<size_t> metric_outputs_;  // the output each metric reads
  std::vector<std::string> log_names_;  // "loss", the outputs' losses, the metrics: what a pass logs
  int64_t num_inputs_ = 1;
  std::vector<std::string> output_names_;
  CompileOptions options_;
  std::optional<DType> autocast_dtype_;  // the policy's compute dtype, as compile() found it
  std::shared_ptr<amp::GradScaler> scaler_;
  StepFunction jit_step_;  // batch_step compiled, with jit_compile
  std::shared_ptr<const MirroredStrategy> strategy_;
  std::shared_ptr<distributed::DistributedDataParallelImpl> replica_;  // under strategy_, from the first step
  FitParams params_;
  Output output_ = Output::standard();
};

}  // namespace ug::train
