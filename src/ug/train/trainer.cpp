#include "ug/train/trainer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "ug/graph/grad_mode.h"
#include "ug/core/error.h"
#include "ug/data/data_loader.h"
#include "ug/data/datasets.h"
#include "ug/data/sampler.h"
#include "ug/data/seeding.h"
#include "ug/distributed/data_parallel.h"
#include "ug/distributed/distributed.h"
#include "ug/nn/functional_model.h"
#include "ug/nn/layers/conv.h"
#include "ug/nn/layers/keras_conv.h"
#include "ug/nn/layers/linear.h"
#include "ug/nn/mixed_precision.h"
#include "ug/ops/join.h"
#include "ug/optim/optim.h"

namespace ug::train {

namespace {

/** Puts the module back in the train/eval mode it had, even when a loop throws. */
class ModeGuard {
 public:
  ModeGuard(nn::Module& m, bool training) : m_(m), was_(m.is_training()) { m_.train(training); }
  ~ModeGuard() { m_.train(was_); }
  ModeGuard(const ModeGuard&) = delete;
  ModeGuard& operator=(const ModeGuard&) = delete;

 private:
  nn::Module& m_;
  bool was_;
};

int64_t batch_size_of(const Tensor& x) { return x.dim() > 0 ? x.size(0) : 1; }

/** x and y, and the sample weights (none, one for every output or one per output): the fields
 *  a batch of them carries. */
std::vector<Tensor> batch_fields(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                 const std::vector<Tensor>& weights, const char* who) {
  std::vector<Tensor> fields = x;
  fields.insert(fields.end(), y.begin(), y.end());
  if (weights.size() > 1 && weights.size() != y.size())
    fail<ValueError>("[", who, "] sample_weight gives ", weights.size(), " weights for a model of ", y.size(),
                     " outputs: give one array (for every output) or one per output");
  const int64_t n = x[0].dim() > 0 ? x[0].size(0) : 0;
  for (const Tensor& weight : weights) {
    if (!weight.defined() || weight.dim() == 0 || weight.size(0) != n)
      fail<ValueError>("[", who, "] sample_weight must have one weight per sample (", n, "), got ",
                       weight.defined() ? "shape " : "none", weight.defined() ? weight.shape() : Shape{});
    fields.push_back(weight);
  }
  return fields;
}

/** A loss given by name, function or Keras loss object, with its per-sample form for sample
 *  weights (null for a function, and for a Keras loss object, which weighs them itself). */
std::pair<LossFn, LossFn> make_loss(const LossSpec& given, std::optional<bool> from_logits, nn::Module& module,
                                    std::string& name) {
  if (const auto* n = std::get_if<std::string>(&given)) {
    if (n->empty()) return {};
    name = canonical_loss_name(*n);
    const bool logits = from_logits.value_or(loss_takes_logits(name, module));
    return {loss_by_name(name, logits), per_sample_loss_by_name(name, logits)};
  }
  if (const auto* k = std::get_if<KerasLoss>(&given)) {
    name = canonical_loss_name(k->kind());  // metrics named "accuracy" follow it, as Keras's
    return {k->as_loss_fn(), nullptr};
  }
  return {std::get<LossFn>(given), nullptr};
}

/** Keras's class_weight_to_sample_weights: class_weight[class] per sample, the class read
 *  from y ([N] or [N, 1] labels, rounded; one-hot [N, C] by argmax), 1 for unnamed classes. */
Tensor class_sample_weights(const Tensor& y, const std::map<int64_t, double>& class_weight) {
  Tensor labels = y;
  if (y.dim() > 1) labels = y.size(-1) != 1 ? y.argmax(-1) : y.squeeze({-1});
  if (labels.dim() != 1)
    fail<ValueError>("[fit] class_weight needs class labels of shape [N], [N, 1] or one-hot [N, C], got y of shape ",
                     y.shape());
  labels = labels.to(Device()).to(DType::Float64).contiguous();
  Tensor weights = empty({labels.size(0)}, {.dtype = DType::Float32});
  const double* l = labels.data_ptr<double>();
  float* w = weights.data_ptr<float>();
  for (int64_t i = 0; i < labels.size(0); ++i) {
    auto it = class_weight.find(static_cast<int64_t>(std::nearbyint(l[i])));
    w[i] = it == class_weight.end() ? 1.0f : static_cast<float>(it->second);
  }
  return weights.to(y.device());
}

void check_verbose(int verbose, const char* who) {
  if (verbose < 0 || verbose > 2) fail<ValueError>("[", who, "] verbose must be 0, 1 or 2, got ", verbose);
}

/** A single-output call's weights: none, or the one given. */
std::vector<Tensor> one_weight(const Tensor& sample_weight) {
  return sample_weight.defined() ? std::vector<Tensor>{sample_weight} : std::vector<Tensor>{};
}

void check_validation_split(double split) {
  if (!(split >= 0 && split < 1)) fail<ValueError>("[fit] validation_split must be in [0, 1), got ", split);
}

/** Batches of the fields ((x, y) or (x, y, sample_weight)) along dim 0, as Keras batches arrays. */
std::unique_ptr<data::DataLoader> tensor_batches(std::vector<Tensor> fields, int64_t batch_size, bool shuffle) {
  return std::make_unique<data::DataLoader>(std::make_shared<data::TensorDataset>(std::move(fields)),
                                            data::DataLoaderOptions{.batch_size = batch_size, .shuffle = shuffle});
}

/** Replaces the trainer's output for a scope (a silent one on ranks other than 0). */
class OutputGuard {
 public:
  OutputGuard(Output& slot, Output replacement) : slot_(slot), saved_(std::move(slot)) {
    slot_ = std::move(replacement);
  }
  ~OutputGuard() { slot_ = std::move(saved_); }
  OutputGuard(const OutputGuard&) = delete;
  OutputGuard& operator=(const OutputGuard&) = delete;

 private:
  Output& slot_;
  Output saved_;
};

/** This rank's share of the samples (x, y[, sample_weight]) under a data-parallel fit: each pass a
 *  DistributedSampler over them (every rank the same number of batches), shuffled by (seed,
 *  epoch) with a seed rank 0 draws from its global generator and broadcasts, so the order is
 *  reproducible as a single process's (manual_seed, a restored checkpoint) and all ranks agree. */
class ShardedBatches : public data::BatchSource {
 public:
  ShardedBatches(std::vector<Tensor> fields, int64_t batch_size, bool shuffle, distributed::ProcessGroupPtr group)
      : dataset_(std::make_shared<data::TensorDataset>(std::move(fields))),
        batch_size_(batch_size),
        shuffle_(shuffle),
        group_(std::move(group)) {}

  void start_epoch(int64_t epoch) override {
    uint64_t seed = 0;
    if (shuffle_) {
      Tensor s = empty({1}, {.dtype = DType::Int64});
      s.data_ptr<int64_t>()[0] = group_->rank() == 0 ? static_cast<int64_t>(data::draw_seed()) : 0;
      group_->broadcast(s, 0)->wait();
      seed = static_cast<uint64_t>(s.data_ptr<int64_t>()[0]);
    }
    auto sampler =
        std::make_shared<data::DistributedSampler>(dataset_->size(), group_->size(), group_->rank(), shuffle_, seed);
    loader_ = std::make_unique<data::DataLoader>(
        dataset_, data::DataLoaderOptions{.batch_size = batch_size_, .sampler = sampler});
    loader_->start_epoch(epoch);
  }
  std::optional<data::Example> next() override {
    if (!loader_) start_epoch(0);
    return loader_->next();
  }
  int64_t num_batches() const override {
    const int64_t per_rank = (dataset_->size() + group_->size() - 1) / group_->size();
    return (per_rank + batch_size_ - 1) / batch_size_;
  }

 private:
  std::shared_ptr<data::TensorDataset> dataset_;
  int64_t batch_size_;
  bool shuffle_;
  distributed::ProcessGroupPtr group_;
  std::unique_ptr<data::DataLoader> loader_;
};

std::vector<Tensor> trainable(const nn::Module& m) {
  std::vector<Tensor> out;
  for (const Tensor& p : m.parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

size_t optimizer_size(const optim::Optimizer& opt) {
  size_t n = 0;
  for (const optim::ParamGroup& g : opt.param_groups()) n += g.params().size();
  return n;
}

/** Keras's model.dtype_policy, as the 16-bit dtype its steps autocast to: the policy its first
 *  layer with weights was built under (a model built under "mixed_float16" and compiled after
 *  the policy went back to "float32" still trains in float16, with loss scaling, as Keras's);
 *  the global policy for a model with none of those layers. */
std::optional<DType> policy_dtype(nn::Module& model) {
  for (const std::shared_ptr<nn::Module>& m : model.modules()) {
    if (const auto* linear = dynamic_cast<const nn::LinearImpl*>(m.get())) return linear->compute_dtype();
    if (const auto* conv = dynamic_cast<const nn::ConvImpl*>(m.get())) return conv->compute_dtype();
    if (const auto* conv = dynamic_cast<const nn::KerasConvImpl*>(m.get())) return conv->compute_dtype();
  }
  return mixed_precision::global_policy().autocast_dtype();
}

}  // namespace

struct Trainer::Pass {
  explicit Pass(size_t values) : values(values) {}
  std::vector<MeanTracker> values;  // log_names_'s: the loss first
  int64_t steps = 0, samples = 0;
};

Trainer::Trainer(std::shared_ptr<nn::Module> module) : module_(std::move(module)) {
  if (!module_) fail<ValueError>("[Trainer] expected a module, got none");
  output_names_ = {"output"};
  if (auto* f = dynamic_cast<nn::FunctionalImpl*>(module_.get())) {
    num_inputs_ = f->num_inputs();
    output_names_ = f->output_names();
  }
}

Trainer::Fields Trainer::split_batch(const data::Example& batch, const char* who) const {
  const size_t n = static_cast<size_t>(num_inputs_) + output_names_.size();
  const size_t outputs = output_names_.size();
  if (batch.size() != n && batch.size() != n + 1 && batch.size() != n + outputs) {
    if (n == 2)
      fail<ValueError>("[", who, "] each batch must be (x, y) or (x, y, sample_weight), got ", batch.size(), " tensor",
                       batch.size() == 1 ? "" : "s");
    fail<ValueError>("[", who, "] each batch must hold the model's ", num_inputs_, " inputs and ", output_names_.size(),
                     " targets (and optionally sample weights: one, or one per output), got ", batch.size(),
                     " tensors");
  }
  Fields f;
  f.x.assign(batch.begin(), batch.begin() + num_inputs_);
  f.y.assign(batch.begin() + num_inputs_, batch.begin() + static_cast<std::ptrdiff_t>(n));
  f.weights.assign(batch.begin() + static_cast<std::ptrdiff_t>(n), batch.end());
  return f;
}

std::vector<Tensor> Trainer::run_model(nn::Module& m, const std::vector<Tensor>& x) {
  if (num_inputs_ == 1 && output_names_.size() == 1) return {m(x[0])};
  return static_cast<nn::FunctionalImpl&>(*module_).forward_all(x);  // the constructor found one
}

void Trainer::check_compiled(const char* who) const {
  if (!compiled())
    fail<RuntimeError>("[", who, "] the model must be compiled before ", who,
                       ": call compile(optimizer=..., loss=...) first");
}

std::shared_ptr<optim::Optimizer> Trainer::make_named_optimizer(double lr) const {
  namespace keras = optim::keras;
  std::shared_ptr<keras::Optimizer> opt;
  if (optimizer_name_ == "adam") opt = std::make_shared<keras::Adam>(keras::AdamOptions(lr));
  else if (optimizer_name_ == "adamw") opt = std::make_shared<keras::AdamW>(keras::AdamWOptions(lr));
  else if (optimizer_name_ == "sgd") opt = std::make_shared<keras::SGD>(keras::SGDOptions(lr));
  else if (optimizer_name_ == "rmsprop") opt = std::make_shared<keras::RMSprop>(keras::RMSpropOptions(lr));
  else opt = std::make_shared<keras::Adagrad>(keras::AdagradOptions(lr));
  opt->build(trainable(*module_));
  return opt;
}

void Trainer::refresh_named_optimizer() {
  if (stepped_) return;
  if (!optimizer_name_.empty() && optimizer_size(*optimizer_) != trainable(*module_).size())
    optimizer_ = make_named_optimizer(learning_rate());
  // A Keras optimizer given unbuilt is built now, as Keras builds it at the first step.
  if (auto* keras = dynamic_cast<optim::keras::Optimizer*>(optimizer_.get()); keras && !keras->built())
    keras->build(trainable(*module_));
}

void Trainer::compile(CompileOptions options) {
  // Nothing counts as compiled until every option has been checked.
  loss_ = nullptr;
  stepped_ = false;
  if (auto* name = std::get_if<std::string>(&options.optimizer)) {
    std::string key = *name;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::vector<std::pair<std::string, double>> defaults = {
        {"adam", 1e-3}, {"adamw", 1e-3}, {"sgd", 1e-2}, {"rmsprop", 1e-3}, {"adagrad", 1e-3}};
    auto it = std::find_if(defaults.begin(), defaults.end(), [&](const auto& d) { return d.first == key; });
    if (it == defaults.end())
      fail<ValueError>("[compile] unknown optimizer \"", *name,
                       "\"; the known optimizers are \"adam\", \"adamw\", \"sgd\", \"rmsprop\", \"adagrad\", or pass "
                       "an optimizer");
    const double lr = options.learning_rate.value_or(it->second);
    if (!(lr > 0)) fail<ValueError>("[compile] learning_rate must be positive, got ", lr);
    optimizer_name_ = key;
    optimizer_ = make_named_optimizer(lr);
  } else {
    auto opt = std::get<std::shared_ptr<optim::Optimizer>>(options.optimizer);
    if (!opt) fail<ValueError>("[compile] optimizer is a null pointer");
    if (options.learning_rate)
      fail<ValueError>(
          "[compile] learning_rate applies to an optimizer given by name; set the lr of the optimizer "
          "object instead");
    optimizer_name_.clear();
    optimizer_ = std::move(opt);
  }

  // The loss of each output, and whether its input is logits.
  const size_t outputs = output_names_.size();
  if (!options.losses.empty() && options.losses.size() != outputs)
    fail<ValueError>("[compile] the model has ", outputs, " outputs; losses gives ", options.losses.size());
  if (!options.loss_weights.empty() && options.loss_weights.size() != outputs)
    fail<ValueError>("[compile] the model has ", outputs, " outputs; loss_weights gives ", options.loss_weights.size());
  std::vector<std::string> loss_names(outputs);
  std::vector<LossFn> losses(outputs), sample_losses(outputs);
  std::vector<std::optional<KerasLoss>> keras_losses(outputs);
  for (size_t i = 0; i < outputs; ++i) {
    const LossSpec& given = options.losses.empty() ? options.loss : options.losses[i];
    std::tie(losses[i], sample_losses[i]) = make_loss(given, options.from_logits, *module_, loss_names[i]);
    if (const auto* k = std::get_if<KerasLoss>(&given)) keras_losses[i] = *k;
  }
  if (std::none_of(losses.begin(), losses.end(), [](const LossFn& l) { return static_cast<bool>(l); }))
    fail<ValueError>("[compile] a loss is required: a name such as \"sparse_categorical_crossentropy\" or a function");
  // Binary accuracy thresholds logits at 0 and probabilities at 0.5: the same rule as the losses.
  const bool from_logits = options.from_logits.value_or(loss_takes_logits("binary_crossentropy", *module_));

  // Logged: the loss, each output's loss (several outputs), the metrics (prefixed by their output's name).
  log_names_ = {"loss"};
  if (outputs > 1)
    for (size_t i = 0; i < outputs; ++i)
      if (losses[i]) log_names_.push_back(output_names_[i] + "_loss");
  if (outputs > 1 && !options.metrics.empty())
    fail<ValueError>("[compile] the model has ", outputs, " outputs: give metrics per output (a list or dict of them)");
  if (!options.output_metrics.empty() && options.output_metrics.size() != outputs)
    fail<ValueError>("[compile] the model has ", outputs, " outputs; metrics gives ", options.output_metrics.size());
  metrics_.clear();
  metric_outputs_.clear();
  for (size_t i = 0; i < outputs; ++i) {
    const auto& given = outputs == 1 && options.output_metrics.empty() ? options.metrics
                        : options.output_metrics.empty()               ? std::vector<Metric>{}
                                                                       : options.output_metrics[i];
    for (const Metric& m : given) {
      if (m.name.empty()) fail<ValueError>("[compile] a metric needs a name");
      const std::string name = outputs == 1 ? m.name : output_names_[i] + "_" + m.name;
      if (std::find(log_names_.begin(), log_names_.end(), name) != log_names_.end())
        fail<ValueError>("[compile] the metric name \"", name, "\" is used twice (\"loss\" is the loss's)");
      metrics_.emplace_back(name, m.fn ? m.fn : metric_by_name(m.name, loss_names[i], from_logits));
      metric_outputs_.push_back(i);
      log_names_.push_back(name);
    }
  }

  const int clips = options.clipnorm.has_value() + options.clipvalue.has_value() + options.global_clipnorm.has_value();
  if (clips > 1) fail<ValueError>("[compile] give at most one of clipnorm, clipvalue and global_clipnorm");
  for (const auto& v : {options.clipnorm, options.clipvalue, options.global_clipnorm})
    if (v && !(*v > 0)) fail<ValueError>("[compile] clipping thresholds must be positive, got ", *v);
  if (options.gradient_accumulation_steps < 1)
    fail<ValueError>("[compile] gradient_accumulation_steps must be at least 1, got ",
                     options.gradient_accumulation_steps);
  // Keras's mixed precision: the model's policy decides (float16 scales the loss).
  autocast_dtype_ = policy_dtype(*module_);
  scaler_ = autocast_dtype_ == DType::Float16
                ? std::make_shared<amp::GradScaler>(amp::GradScalerOptions{.init_scale = 32768.0})
                : nullptr;
  std::shared_ptr<const MirroredStrategy> strategy = options.strategy ? options.strategy : current_strategy();
  if (strategy && (num_inputs_ > 1 || outputs > 1))
    fail<ValueError>("[compile] a model of several inputs or outputs cannot train under a distribution strategy yet");
  strategy_ = std::move(strategy);
  replica_.reset();
  options_ = std::move(options);
  jit_step_ = options_.jit_compile
                  ? options_.jit_compile(
                        [this](const std::vector<Tensor>& batch) {
                          return batch_step(split_batch(batch, "fit"), step_inside());
                        },
                        scaler_ ? scaler_->state_tensors() : std::vector<std::pair<std::string, Tensor>>{})
                  : StepFunction();
  loss_weights_ = options_.loss_weights.empty() ? std::vector<double>(outputs, 1.0) : options_.loss_weights;
  sample_losses_ = std::move(sample_losses);
  keras_losses_ = std::move(keras_losses);
  losses_ = std::move(losses);
  loss_ = *std::find_if(losses_.begin(), losses_.end(), [](const LossFn& l) { return static_cast<bool>(l); });
}

void Trainer::enter_autocast(std::optional<AutocastGuard>& region, const Tensor& x) const {
  if (autocast_dtype_) region.emplace(x.device().type, *autocast_dtype_);
}

optim::Optimizer& Trainer::optimizer() const {
  if (!optimizer_) fail<RuntimeError>("[Trainer] there is no optimizer before compile(optimizer=..., loss=...)");
  return *optimizer_;
}

double Trainer::learning_rate() const {
  const auto& groups = optimizer().param_groups();
  if (!groups.empty()) return groups.front().lr();
  return optim::hyper_get<double>(optimizer_->defaults(), "lr");
}

void Trainer::set_learning_rate(double lr) {
  if (!(lr >= 0)) fail<ValueError>("[Trainer] the learning rate must be non-negative, got ", lr);
  optimizer().defaults().insert("lr", lr);
  for (optim::ParamGroup& g : optimizer_->param_groups()) g.lr() = lr;
}

distributed::ProcessGroupPtr Trainer::process_group() const { return strategy_ ? strategy_->group() : nullptr; }

int Trainer::rank() const { return strategy_ ? strategy_->group()->rank() : 0; }

void Trainer::record(Pass& pass, const std::vector<Tensor>& outputs, const std::vector<Tensor>& losses,
                     const std::vector<Tensor>& targets, int64_t batch_size, bool global) {
  std::vector<double> means;
  for (const Tensor& loss : losses)
    if (loss.defined()) means.push_back(loss.item<double>());
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < metrics_.size(); ++i) {
      const Metric& m = metrics_[i];
      const size_t o = metric_outputs_[i];
      Tensor v = m.fn(outputs[o].detach(), targets[o]);
      if (!v.defined() || v.numel() != 1)
        fail<ValueError>("[", m.name, "] a metric must return one value, got shape ",
                         v.defined() ? v.shape() : Shape{});
      means.push_back(v.item<double>());
    }
  }
  if (global && strategy_) {
    // Every replica's batch: sums of mean x size and the sizes, averaged as one batch.
    Tensor sums = empty({static_cast<int64_t>(means.size()) + 1}, {.dtype = DType::Float64});
    double* p = sums.data_ptr<double>();
    for (size_t i = 0; i < means.size(); ++i) p[i] = means[i] * static_cast<double>(batch_size);
    p[means.size()] = static_cast<double>(batch_size);
    distributed::all_reduce(sums, distributed::ReduceOp::Sum, strategy_->group());
    batch_size = static_cast<int64_t>(p[means.size()]);
    for (size_t i = 0; i < means.size(); ++i) means[i] = p[i] / p[means.size()];
  }
  for (size_t i = 0; i < means.size(); ++i) pass.values[i].add(means[i], batch_size);
  pass.samples += batch_size;
  ++pass.steps;
}

nn::Module& Trainer::step_module(const Tensor& x) {
  if (!strategy_) return *module_;
  if (!replica_) {
    // Lazily sized layers make their parameters in their first forward: run one without
    // effects (no autograd, eval mode) so that DDP broadcasts and buckets all of them.
    {
      NoGradGuard no_grad;
      ModeGuard eval(*module_, false);
      std::optional<AutocastGuard> region;
      enter_autocast(region, x);
      (*module_)(x);
    }
    replica_ = std::make_shared<distributed::DistributedDataParallelImpl>(
        module_, distributed::DdpOptions{.process_group = strategy_->group()});
  }
  return *replica_;
}

Logs Trainer::pass_logs(const Pass& pass) const {
  Logs logs;
  for (size_t i = 0; i < log_names_.size(); ++i) logs.insert(log_names_[i], pass.values[i].result());
  return logs;
}

void Trainer::apply_gradients(int64_t accumulated) {
  NoGradGuard no_grad;
  std::vector<Tensor> params;
  for (const optim::ParamGroup& g : optimizer_->param_groups())
    params.insert(params.end(), g.params().begin(), g.params().end());
  const int64_t k = options_.gradient_accumulation_steps;
  if (accumulated < k)  // an epoch ended part-way through: the mean over the batches it had
    for (const Tensor& p : params)
      if (Tensor g = p.grad(); g.defined()) g.mul_(Scalar(static_cast<double>(k) / static_cast<double>(accumulated)));
  if (scaler_) scaler_->unscale_(*optimizer_);  // clipping sees the true gradients
  if (options_.clipnorm)
    for (const Tensor& p : params) nn::utils::clip_grad_norm_({p}, *options_.clipnorm);
  else if (options_.global_clipnorm) nn::utils::clip_grad_norm_(params, *options_.global_clipnorm);
  else if (options_.clipvalue) nn::utils::clip_grad_value_(params, *options_.clipvalue);
  if (scaler_) {
    scaler_->step(*optimizer_);  // skipped when a gradient overflowed
    scaler_->update();
  } else {
    optimizer_->step();
  }
  stepped_ = true;
  optimizer_->zero_grad();
  module_->zero_grad();
}

std::vector<Tensor> Trainer::compute_loss(const std::vector<Tensor>& outputs, const std::vector<Tensor>& y,
                                          const std::vector<Tensor>& weights, const char* who) const {
  auto weight = [&](size_t i) { return weights.empty() ? Tensor() : weights[weights.size() == 1 ? 0 : i]; };
  if (outputs.size() == 1) {
    Tensor loss = output_loss(0, outputs[0], y[0], weight(0), who);
    return {loss_weights_[0] == 1.0 ? loss : loss.mul(Scalar(loss_weights_[0]))};
  }
  std::vector<Tensor> losses = {Tensor()};  // the total first: Keras's sum of weighted losses
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!losses_[i]) continue;
    losses.push_back(output_loss(i, outputs[i], y[i], weight(i), who));
    const Tensor part = loss_weights_[i] == 1.0 ? losses.back() : losses.back().mul(Scalar(loss_weights_[i]));
    losses[0] = losses[0].defined() ? losses[0].add(part) : part;
  }
  return losses;
}

Tensor Trainer::output_loss(size_t i, const Tensor& output, const Tensor& y, const Tensor& weight,
                            const char* who) const {
  const LossFn& loss_fn = losses_[i];
  if (!weight.defined()) {
    Tensor loss = loss_fn(output, y);
    if (!loss.defined() || loss.numel() != 1)
      fail<ValueError>("[", who, "] the loss must be a single value, got shape ",
                       loss.defined() ? loss.shape() : Shape{});
    return loss;
  }
  if (keras_losses_[i]) {  // Keras's loss object: its own reduction of the weighted losses
    Tensor loss = (*keras_losses_[i])(y, output, weight);
    if (loss.numel() != 1)
      fail<ValueError>("[", who, "] the loss must be a single value, got shape ", loss.shape(),
                       " (a Keras loss with reduction=\"none\" cannot train)");
    return loss;
  }
  // Keras's "sum_over_batch_size": sum(weight * loss) / the number of per-sample losses.
  Tensor values = sample_losses_[i] ? sample_losses_[i](output, y) : loss_fn(output, y);
  const int64_t n = weight.dim() > 0 ? weight.size(0) : 1;
  if (!values.defined() || values.dim() == 0 || values.size(0) != n)
    fail<ValueError>("[", who, "] sample weights need the loss per sample: a named loss, or a loss function that ",
                     "returns one value per sample (shape [", n, ", ...]), got shape ",
                     values.defined() ? values.shape() : Shape{});
  Dims shape(static_cast<size_t>(values.dim()), 1);
  shape[0] = n;
  const Tensor w = weight.to(values.dtype()).reshape(shape);
  return values.mul(w).sum().div(Scalar(static_cast<double>(values.numel())));
}

std::vector<Tensor> Trainer::batch_step(const Fields& batch, bool step_inside) {
  std::vector<Tensor> result;
  {
    std::optional<AutocastGuard> region;
    enter_autocast(region, batch.x[0]);
    result = run_model(step_module(batch.x[0]), batch.x);
    for (Tensor& loss : compute_loss(result, batch.y, batch.weights, "fit")) result.push_back(std::move(loss));
  }
  refresh_named_optimizer();
  const int64_t k = options_.gradient_accumulation_steps;
  const Tensor& loss = result[output_names_.size()];
  const Tensor part = k == 1 ? loss : loss.div(Scalar(static_cast<double>(k)));
  (scaler_ ? scaler_->scale(part) : part).backward();
  if (step_inside) apply_gradients(1);
  return result;
}

std::shared_ptr<History> Trainer::fit(data::BatchSource& train, FitOptions o) {
  check_compiled("fit");
  check_verbose(o.verbose, "fit");
  check_validation_split(o.validation_split);
  if (o.validation_split > 0) fail<ValueError>("[fit] validation_split needs array x and y");
  if (!o.sample_weight.empty())
    fail<ValueError>("[fit] sample_weight needs array x and y; batches carry their weights as (x, y, sample_weight)");
  if (o.batch_size)
    fail<ValueError>("[fit] batch_size must not be given when x yields batches (they are batched already)");
  if (o.initial_epoch < 0) fail<ValueError>("[fit] initial_epoch must be non-negative, got ", o.initial_epoch);
  if (o.validation_freq < 1)
    fail<ValueError>("[fit] validation_freq must be a positive number of epochs, got ", o.validation_freq);
  if (o.steps_per_epoch == 0 || o.steps_per_epoch < -1)
    fail<ValueError>("[fit] steps_per_epoch must be positive (or -1 for whole passes), got ", o.steps_per_epoch);

  std::vector<std::shared_ptr<Callback>> callbacks;
  std::shared_ptr<History> history;
  for (const auto& cb : o.callbacks) {
    if (!cb) fail<ValueError>("[fit] a callback is a null pointer");
    if (auto h = std::dynamic_pointer_cast<History>(cb)) history = h;
    callbacks.push_back(cb);
  }
  if (!history) callbacks.push_back(history = std::make_shared<History>());
  for (const auto& cb : callbacks) cb->set_trainer(this);

  int64_t steps = train.num_batches();
  if (o.steps_per_epoch > 0) steps = steps < 0 ? o.steps_per_epoch : std::min(steps, o.steps_per_epoch);
  params_ = {o.epochs, steps, o.verbose};
  const int64_t k = options_.gradient_accumulation_steps;

  // Under a strategy rank 0 alone prints and runs the callbacks that only write or print.
  const bool chief = rank() == 0;
  if (!chief) {
    o.verbose = 0;
    std::erase_if(callbacks, [](const auto& cb) { return cb->chief_only(); });
  }
  OutputGuard quiet(output_, chief ? output_ : Output{[](std::string_view) {}, false});

  ModeGuard mode(*module_, true);
  module_->zero_grad();
  stop_training = false;
  Logs logs;
  for (const auto& cb : callbacks) cb->on_train_begin(logs);
  for (int64_t epoch = o.initial_epoch; epoch < o.epochs; ++epoch) {
    Logs epoch_logs;
    for (const auto& cb : callbacks) cb->on_epoch_begin(epoch, epoch_logs);
    std::optional<ProgressBar> bar;
    if (o.verbose > 0) {
      output_.line("Epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs));
      bar.emplace(output_, steps, o.verbose);
    }
    Pass pass(log_names_.size());
    int64_t accumulated = 0;
    train.start_epoch(epoch);
    while (o.steps_per_epoch < 0 || pass.steps < o.steps_per_epoch) {
      std::optional<data::Example> batch = train.next();
      if (!batch) break;
      Fields xy = split_batch(*batch, "fit");
      if (!o.class_weight.empty()) {
        if (!xy.weights.empty()) fail<ValueError>("[fit] give class_weight or sample weights, not both");
        if (xy.y.size() > 1) fail<ValueError>("[fit] class_weight is for a model of one output");
        xy.weights = {class_sample_weights(xy.y[0], o.class_weight)};
      }
      Logs batch_logs;
      for (const auto& cb : callbacks) cb->on_train_batch_begin(pass.steps, batch_logs);
      // The first step runs eagerly: it makes lazily sized layers' parameters and the optimizer.
      std::vector<Tensor> step = jit_step_ && stepped_ ? jit_step_(batch_fields(xy.x, xy.y, xy.weights, "fit"))
                                                       : batch_step(xy, step_inside());
      const std::vector<Tensor> losses(step.begin() + static_cast<std::ptrdiff_t>(output_names_.size()), step.end());
      step.resize(output_names_.size());
      record(pass, step, losses, xy.y, batch_size_of(xy.x[0]), /*global=*/true);
      if (++accumulated == k) {
        if (!step_inside()) apply_gradients(accumulated);
        accumulated = 0;
      }
      batch_logs = pass_logs(pass);
      for (const auto& cb : callbacks) cb->on_train_batch_end(pass.steps - 1, batch_logs);
      if (bar) bar->update(pass.steps, pass.samples, batch_logs);
      if (stop_training) break;
    }
    if (accumulated > 0) apply_gradients(accumulated);
    if (pass.steps == 0) fail<ValueError>("[fit] the training data gave no batches in epoch ", epoch);
    epoch_logs = pass_logs(pass);
    if (o.validation_data && (epoch + 1) % o.validation_freq == 0)
      for (const auto& [name, value] : run_evaluation(*o.validation_data, 0, "fit"))
        epoch_logs.insert("val_" + name, value);
    if (bar) bar->finish(pass.steps, pass.samples, epoch_logs);
    for (const auto& cb : callbacks) cb->on_epoch_end(epoch, epoch_logs);
    logs = epoch_logs;
    if (stop_training) break;
  }
  for (const auto& cb : callbacks) cb->on_train_end(logs);
  return history;
}

std::shared_ptr<History> Trainer::fit(const Tensor& x, const Tensor& y, FitOptions o) {
  return fit(std::vector<Tensor>{x}, std::vector<Tensor>{y}, std::move(o));
}

std::shared_ptr<History> Trainer::fit(const std::vector<Tensor>& x, const std::vector<Tensor>& y, FitOptions o) {
  check_compiled("fit");
  check_arrays(x, y, "fit");
  check_validation_split(o.validation_split);
  const int64_t batch_size = o.batch_size.value_or(32);
  o.batch_size.reset();  // used up here: the batch-source fit takes batches as they come
  const int replicas = strategy_ ? strategy_->num_replicas_in_sync() : 1;
  if (batch_size % replicas != 0)
    fail<ValueError>("[fit] under a strategy batch_size is the global batch, split evenly over the ", replicas,
                     " replicas: ", batch_size, " is not a multiple of ", replicas);
  // This rank's batches of (x, y): all of them, or under a strategy its shard.
  const std::vector<Tensor> weights = std::exchange(o.sample_weight, {});
  if (!weights.empty() && !o.class_weight.empty())
    fail<ValueError>("[fit] give sample_weight or class_weight, not both");
  auto batches = [&](std::vector<Tensor> fields) -> std::unique_ptr<data::BatchSource> {
    if (!strategy_) return tensor_batches(std::move(fields), batch_size, o.shuffle);
    return std::make_unique<ShardedBatches>(std::move(fields), batch_size / replicas, o.shuffle, strategy_->group());
  };
  if (o.validation_split == 0) return fit(*batches(batch_fields(x, y, weights, "fit")), std::move(o));
  // Keras's rule: the samples from floor(n * (1 - validation_split)) on, taken before shuffling.
  if (o.validation_data) fail<ValueError>("[fit] give validation_split or validation_data, not both");
  const int64_t n = x[0].dim() > 0 ? x[0].size(0) : 0;
  const auto split = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - o.validation_split)));
  if (split <= 0 || split >= n)
    fail<ValueError>("[fit] validation_split=", o.validation_split, " leaves no samples on one side of ", n);
  auto heads = [&](const std::vector<Tensor>& ts) {
    std::vector<Tensor> out;
    for (const Tensor& t : ts) out.push_back(t.narrow(0, 0, split));
    return out;
  };
  auto tails = [&](const std::vector<Tensor>& ts) {
    std::vector<Tensor> out;
    for (const Tensor& t : ts) out.push_back(t.narrow(0, split, n - split));
    return out;
  };
  auto train = batches(batch_fields(heads(x), heads(y), heads(weights), "fit"));
  auto validation = evaluation_batches(tails(x), tails(y), batch_size, tails(weights));
  o.validation_data = validation.get();
  o.validation_split = 0;
  return fit(*train, std::move(o));
}

Logs Trainer::run_evaluation(data::BatchSource& data, int verbose, const char* who) {
  NoGradGuard no_grad;
  ModeGuard mode(*module_, false);
  OutputGuard quiet(output_, rank() == 0 ? output_ : Output{[](std::string_view) {}, false});
  std::optional<ProgressBar> bar;
  if (verbose > 0) bar.emplace(output_, data.num_batches(), verbose);
  Pass pass(log_names_.size());
  data.start_epoch(0);
  while (std::optional<data::Example> batch = data.next()) {
    const Fields xy = split_batch(*batch, who);
    std::optional<AutocastGuard> region;
    enter_autocast(region, xy.x[0]);
    const std::vector<Tensor> outputs = run_model(*module_, xy.x);
    record(pass, outputs, compute_loss(outputs, xy.y, xy.weights, who), xy.y, batch_size_of(xy.x[0]));
    if (bar) bar->update(pass.steps, pass.samples, pass_logs(pass));
  }
  Logs logs = strategy_ ? global_pass_logs(pass) : pass.steps > 0 ? pass_logs(pass) : Logs{};
  if (!logs.contains("loss")) fail<ValueError>("[", who, "] the evaluation data gave no batches");
  if (bar) bar->finish(pass.steps, pass.samples, logs);
  return logs;
}

Logs Trainer::global_pass_logs(const Pass& pass) const {
  // Sums of (batch mean x batch size) and the sample count, added over the replicas: the
  // means of one pass over all their batches, whatever each rank's share was.
  const size_t n = log_names_.size();
  Tensor sums = empty({static_cast<int64_t>(n) + 1}, {.dtype = DType::Float64});
  double* p = sums.data_ptr<double>();
  for (size_t i = 0; i < n; ++i) p[i] = pass.values[i].sum();
  p[n] = static_cast<double>(pass.values[0].count());
  distributed::all_reduce(sums, distributed::ReduceOp::Sum, strategy_->group());
  Logs logs;
  if (p[n] == 0) return logs;
  for (size_t i = 0; i < n; ++i) logs.insert(log_names_[i], p[i] / p[n]);
  return logs;
}

Logs Trainer::evaluate(data::BatchSource& data, int verbose) {
  check_compiled("evaluate");
  check_verbose(verbose, "evaluate");
  return run_evaluation(data, verbose, "evaluate");
}

Logs Trainer::evaluate(const Tensor& x, const Tensor& y, int64_t batch_size, int verbose, const Tensor& sample_weight) {
  return evaluate(std::vector<Tensor>{x}, std::vector<Tensor>{y}, batch_size, verbose, one_weight(sample_weight));
}

Logs Trainer::evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& y, int64_t batch_size, int verbose,
                       const std::vector<Tensor>& sample_weight) {
  check_compiled("evaluate");
  return evaluate(*evaluation_batches(x, y, batch_size, sample_weight), verbose);
}

std::unique_ptr<data::BatchSource> Trainer::evaluation_batches(const Tensor& x, const Tensor& y, int64_t batch_size,
                                                               const Tensor& sample_weight) const {
  return evaluation_batches(std::vector<Tensor>{x}, std::vector<Tensor>{y}, batch_size, one_weight(sample_weight));
}

void Trainer::check_arrays(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const char* who) const {
  if (static_cast<int64_t>(x.size()) != num_inputs_)
    fail<ValueError>("[", who, "] the model takes ", num_inputs_, " input", num_inputs_ == 1 ? "" : "s", ", got ",
                     x.size());
  if (y.size() != output_names_.size())
    fail<ValueError>("[", who, "] the model has ", output_names_.size(), " output",
                     output_names_.size() == 1 ? "" : "s", ": give as many targets, got ", y.size());
}

std::unique_ptr<data::BatchSource> Trainer::evaluation_batches(const std::vector<Tensor>& x,
                                                               const std::vector<Tensor>& y, int64_t batch_size,
                                                               const std::vector<Tensor>& sample_weight) const {
  check_arrays(x, y, "evaluate");
  if (batch_size <= 0) fail<ValueError>("[evaluate] batch_size must be positive, got ", batch_size);
  std::vector<Tensor> fields = batch_fields(x, y, sample_weight, "evaluate");
  if (!strategy_) return tensor_batches(std::move(fields), batch_size, false);
  // Contiguous shares, as even as they can be: no sample counted twice (a DistributedSampler
  // would pad the last share with repeats, which would bias the means).
  const int64_t n = x[0].dim() > 0 ? x[0].size(0) : 0, replicas = strategy_->num_replicas_in_sync(), r = rank();
  const int64_t begin = n * r / replicas, end = n * (r + 1) / replicas;
  const int64_t per_rank = std::max<int64_t>(1, batch_size / replicas);
  for (Tensor& f : fields) f = f.narrow(0, begin, end - begin);
  return tensor_batches(std::move(fields), per_rank, false);
}

Tensor Trainer::predict(data::BatchSource& data, int verbose) {
  if (output_names_.size() != 1)
    fail<ValueError>("[predict] the model has ", output_names_.size(), " outputs: predict_all returns them all");
  return predict_all(data, verbose)[0];
}

std::vector<Tensor> Trainer::predict_all(data::BatchSource& data, int verbose) {
  check_verbose(verbose, "predict");
  NoGradGuard no_grad;
  ModeGuard mode(*module_, false);
  std::optional<ProgressBar> bar;
  if (verbose > 0) bar.emplace(output_, data.num_batches(), verbose);
  std::vector<std::vector<Tensor>> outputs(output_names_.size());  // per output, per batch
  int64_t samples = 0, steps = 0;
  data.start_epoch(0);
  while (std::optional<data::Example> batch = data.next()) {
    if (static_cast<int64_t>(batch->size()) < num_inputs_)
      fail<ValueError>("[predict] a batch must hold the model's ", num_inputs_, " input", num_inputs_ == 1 ? "" : "s",
                       ", got ", batch->size(), " tensors");
    std::optional<AutocastGuard> region;
    enter_autocast(region, batch->front());
    const std::vector<Tensor> out = run_model(*module_, {batch->begin(), batch->begin() + num_inputs_});
    for (size_t i = 0; i < out.size(); ++i) outputs[i].push_back(out[i]);
    samples += batch_size_of(batch->front());
    ++steps;
    if (bar) bar->update(steps, samples, {});
  }
  if (steps == 0) fail<ValueError>("[predict] the data gave no batches");
  if (bar) bar->finish(steps, samples, {});
  std::vector<Tensor> result;
  for (const auto& parts : outputs) result.push_back(parts.size() == 1 ? parts.front() : cat(parts, 0));
  return result;
}

Tensor Trainer::predict(const Tensor& x, int64_t batch_size, int verbose) {
  return predict(*tensor_batches({x}, batch_size, false), verbose);
}

std::vector<Tensor> Trainer::predict_all(const std::vector<Tensor>& x, int64_t batch_size, int verbose) {
  if (static_cast<int64_t>(x.size()) != num_inputs_)
    fail<ValueError>("[predict] the model takes ", num_inputs_, " input", num_inputs_ == 1 ? "" : "s", ", got ",
                     x.size());
  return predict_all(*tensor_batches(x, batch_size, false), verbose);
}

}  // namespace ug::train
