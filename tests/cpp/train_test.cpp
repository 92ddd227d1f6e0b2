// ug::train from C++: fit against the hand-written loop (bit for bit), gradient accumulation
// and clipping, each callback's behaviour, the progress output in both modes, the loss and
// metric rules, and the errors. The Python front end is tested in tests/python/test_fit.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "test_util.h"
#include "ug/io/safetensors.h"
#include "ug/ops/join.h"
#include "ug/nn/nn.h"
#include "ug/optim/optim.h"
#include "ug/train/format.h"
#include "ug/train/train.h"

namespace {

using ug::Tensor;
using ug::test::values;
namespace nn = ug::nn;
namespace F = ug::nn::functional;
namespace optim = ug::optim;
namespace train = ug::train;

/** Fixed batches, the same each epoch: the stand-in for a DataLoader. */
class Batches : public ug::data::BatchSource {
 public:
  explicit Batches(std::vector<ug::data::Example> batches) : batches_(std::move(batches)) {}
  void start_epoch(int64_t) override { pos_ = 0; }
  std::optional<ug::data::Example> next() override {
    if (pos_ >= batches_.size()) return std::nullopt;
    return batches_[pos_++];
  }
  int64_t num_batches() const override { return static_cast<int64_t>(batches_.size()); }
  const std::vector<ug::data::Example>& all() const { return batches_; }

 private:
  std::vector<ug::data::Example> batches_;
  size_t pos_ = 0;
};

Batches classification_data(int64_t batches, int64_t batch_size, uint64_t seed = 0) {
  ug::manual_seed(seed);
  std::vector<ug::data::Example> out;
  for (int64_t i = 0; i < batches; ++i) {
    Tensor x = ug::randn({batch_size, 4});
    Tensor y = x.narrow(1, 0, 3).argmax(1);  // learnable: the largest of the first three features
    out.push_back({x, y});
  }
  return Batches(out);
}

nn::Sequential mlp(uint64_t seed = 1) {
  ug::manual_seed(seed);
  return nn::Sequential(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 3));
}

std::vector<std::vector<double>> parameter_values(const nn::Module& m) {
  std::vector<std::vector<double>> out;
  for (const Tensor& p : m.parameters()) out.push_back(values(p));
  return out;
}

/** Records the hook calls, and can script a metric ("val_loss") per epoch for the callbacks after it. */
class Recorder : public train::Callback {
 public:
  std::vector<std::string> calls;
  std::vector<double> scripted;
  std::vector<nn::TensorDict> weights;  // at each epoch's end
  void on_train_begin(train::Logs&) override { calls.push_back("train_begin"); }
  void on_train_end(train::Logs&) override { calls.push_back("train_end"); }
  void on_epoch_begin(int64_t e, train::Logs&) override { calls.push_back("epoch_begin " + std::to_string(e)); }
  void on_epoch_end(int64_t e, train::Logs& logs) override {
    calls.push_back("epoch_end " + std::to_string(e));
    if (!scripted.empty()) logs.insert("val_loss", scripted.at(static_cast<size_t>(e)));
    nn::TensorDict w;
    for (const auto& [k, t] : trainer().module().state_dict()) w.insert(k, t.detach().clone());
    weights.push_back(w);
  }
  void on_train_batch_begin(int64_t b, train::Logs&) override { calls.push_back("batch_begin " + std::to_string(b)); }
  void on_train_batch_end(int64_t b, train::Logs& logs) override {
    calls.push_back("batch_end " + std::to_string(b));
    EXPECT_TRUE(logs.contains("loss"));
  }
};

/** Captures what fit prints. */
train::Output capture(std::string& into, bool terminal) {
  return {[&into](std::string_view s) { into += s; }, terminal};
}

TEST(Train, FitEqualsTheHandWrittenLoopBitForBit) {
  Batches data = classification_data(5, 16);
  for (const std::string kind : {"sgd", "adam"}) {
    nn::Sequential a = mlp(), b = mlp();
    auto make = [&](const nn::Sequential& m) -> std::shared_ptr<optim::Optimizer> {
      if (kind == "sgd") return std::make_shared<optim::SGD>(m->parameters(), optim::SGDOptions(0.1).momentum(0.9));
      return std::make_shared<optim::Adam>(m->parameters(), optim::AdamOptions(1e-2));
    };
    train::Trainer trainer(a);
    trainer.compile({.optimizer = make(a), .loss = nn::CrossEntropyLoss(), .metrics = {"accuracy"}});
    auto history = trainer.fit(data, {.epochs = 3, .verbose = 0});

    auto opt = make(b);
    nn::CrossEntropyLoss loss_fn;
    std::vector<double> epoch_losses;
    for (int epoch = 0; epoch < 3; ++epoch) {
      double sum = 0;
      for (const auto& xy : data.all()) {
        opt->zero_grad();
        Tensor loss = loss_fn(b(xy[0]), xy[1]);
        loss.backward();
        opt->step();
        sum += loss.item<double>() * 16;
      }
      epoch_losses.push_back(sum / 80);
    }
    EXPECT_EQ(parameter_values(*a), parameter_values(*b)) << kind;
    EXPECT_EQ(history->history.at("loss"), epoch_losses) << kind;
    EXPECT_EQ(history->epoch, (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(history->history.at("accuracy").size(), 3u);
    EXPECT_TRUE(a->is_training());
  }
}

TEST(Train, NamedAdamIsKerassAdam) {
  Batches data = classification_data(4, 8);
  nn::Sequential a = mlp(), b = mlp();
  train::Trainer trainer(a);
  trainer.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});  // logits: no softmax at the end
  trainer.fit(data, {.epochs = 2, .verbose = 0});
  EXPECT_NE(dynamic_cast<optim::keras::Adam*>(&trainer.optimizer()), nullptr);
  optim::keras::Adam opt;
  opt.build(b->parameters());
  for (int epoch = 0; epoch < 2; ++epoch)
    for (const auto& xy : data.all()) {
      F::cross_entropy(b(xy[0]), xy[1]).backward();
      opt.step();
      opt.zero_grad();
    }
  EXPECT_EQ(parameter_values(*a), parameter_values(*b));
  EXPECT_DOUBLE_EQ(trainer.learning_rate(), 1e-3);
}

TEST(Train, LazyDenseGetsItsParametersIntoANamedOptimizer) {
  Batches data = classification_data(3, 8);
  ug::manual_seed(0);
  nn::Sequential model(nn::Dense(16, "relu"), nn::Dense(3));
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  trainer.fit(data, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(model->parameters().size(), 4u);
  size_t in_optimizer = 0;
  for (const auto& g : trainer.optimizer().param_groups()) in_optimizer += g.params().size();
  EXPECT_EQ(in_optimizer, 4u);
}

TEST(Train, FromLogitsRuleFollowsTheLastLayer) {
  ug::manual_seed(0);
  Tensor x = ug::randn({6, 4});
  Tensor y = ug::tensor({0, 1, 2, 0, 1, 2}, {.dtype = ug::int64});
  nn::Sequential logits(nn::Linear(4, 3));
  nn::Sequential probs((*logits)[0], nn::Softmax(-1));
  EXPECT_TRUE(train::loss_takes_logits("sparse_categorical_crossentropy", *logits));
  EXPECT_FALSE(train::loss_takes_logits("sparse_categorical_crossentropy", *probs));
  EXPECT_FALSE(train::loss_takes_logits("binary_crossentropy", *nn::Sequential(nn::Dense(1, "sigmoid", 4))));
  EXPECT_TRUE(train::loss_takes_logits("binary_crossentropy", *probs));  // softmax is not sigmoid

  // Both models compute the same loss, each reading its own output the right way.
  train::Trainer t1(logits), t2(probs);
  t1.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  t2.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  Batches one({{x, y}});
  EXPECT_NEAR(t1.evaluate(one, 0).at("loss"), t2.evaluate(one, 0).at("loss"), 1e-6);
  EXPECT_NEAR(t1.evaluate(one, 0).at("loss"), F::cross_entropy(logits(x), y).item<double>(), 1e-7);

  // Explicit from_logits=false on the logits model reads them as probabilities (clipped).
  train::Trainer t3(logits);
  t3.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy", .from_logits = false});
  Tensor p = logits(x).clamp(ug::Scalar(1e-7), ug::Scalar(1 - 1e-7));
  EXPECT_NEAR(t3.evaluate(one, 0).at("loss"), F::nll_loss(p.log(), y).item<double>(), 1e-6);
}

TEST(Train, KerasLossObjectsReduceInKerasOrder) {
  ug::manual_seed(3);
  Tensor logits = ug::randn({6, 4}), labels = ug::tensor({0.0, 3.0, 1.0, 1.0, 2.0, 0.0}).to(ug::DType::Int64);
  Tensor per_sample = F::cross_entropy(logits, labels, {.reduction = "none"});
  train::KerasLoss mean("sparse_categorical_crossentropy", {.from_logits = true});
  EXPECT_EQ(mean.name(), "sparse_categorical_crossentropy");
  EXPECT_NEAR(mean(labels, logits).item<double>(), per_sample.mean().item<double>(), 1e-6);
  Tensor w = ug::tensor({1.0, 0.0, 2.0, 0.5, 0.0, 1.5}).to(ug::DType::Float32);
  train::KerasLoss by_weight("sparse_categorical_crossentropy",
                             {.from_logits = true, .reduction = "mean_with_sample_weight"});
  EXPECT_NEAR(by_weight(labels, logits, w).item<double>(), (per_sample * w).sum().item<double>() / 5.0, 1e-6);
  train::KerasLoss none("mse", {.reduction = "none"});
  EXPECT_EQ(none(logits, logits * 2).shape(), ug::Shape{6});
  // compile's order is torch's: loss(output, target).
  EXPECT_NEAR(mean.as_loss_fn()(logits, labels).item<double>(), mean(labels, logits).item<double>(), 0);
  EXPECT_THROW(train::KerasLoss("mse", {.reduction = "batch"}), ug::ValueError);
}

TEST(Train, NamedLossesMatchTheirDefinitions) {
  ug::manual_seed(2);
  Tensor out = ug::randn({5, 3}), y = ug::randn({5, 3});
  Tensor probs = out.softmax(-1), onehot = ug::randn({5, 3}).softmax(-1);
  EXPECT_NEAR(train::loss_by_name("mse", true)(out, y).item<double>(), F::mse_loss(out, y).item<double>(), 1e-7);
  EXPECT_NEAR(train::loss_by_name("mean_absolute_error", true)(out, y).item<double>(),
              F::l1_loss(out, y).item<double>(), 1e-7);
  EXPECT_NEAR(train::loss_by_name("huber", true)(out, y).item<double>(), F::huber_loss(out, y).item<double>(), 1e-7);
  EXPECT_NEAR(train::loss_by_name("categorical_crossentropy", true)(out, onehot).item<double>(),
              train::loss_by_name("categorical_crossentropy", false)(probs, onehot).item<double>(), 1e-6);
  Tensor z = ug::randn({5}), t = ug::tensor({0.0, 1.0, 1.0, 0.0, 1.0});
  EXPECT_NEAR(train::loss_by_name("binary_crossentropy", true)(z.unsqueeze(1), t).item<double>(),
              train::loss_by_name("binary_crossentropy", false)(z.sigmoid(), t).item<double>(), 1e-6);
}

TEST(Train, MetricsAreSampleWeightedMeans) {
  // Two batches of 3 and 1 samples: accuracy 2/3 and 0/1 averages to 2/4, not (2/3 + 0) / 2.
  nn::Sequential id{nn::Identity()};
  Tensor x1 = ug::tensor({{1.0, 0.0}, {0.0, 1.0}, {1.0, 0.0}}), y1 = ug::tensor({0, 1, 1}, {.dtype = ug::int64});
  Tensor x2 = ug::tensor({{1.0, 0.0}}), y2 = ug::tensor({1}, {.dtype = ug::int64});
  Batches data({{x1, y1}, {x2, y2}});
  train::Trainer trainer(id);
  trainer.compile({.optimizer = "sgd",
                   .loss = "sparse_categorical_crossentropy",
                   .metrics = {"accuracy", {"n", [](const Tensor& out, const Tensor&) {
                                              return ug::scalar_tensor(static_cast<double>(out.size(0)), {});
                                            }}}});
  train::Logs logs = trainer.evaluate(data, 0);
  EXPECT_DOUBLE_EQ(logs.at("n"), (3.0 * 3 + 1.0 * 1) / 4);
  EXPECT_DOUBLE_EQ(logs.at("accuracy"), 0.5);
  const double l1 = F::cross_entropy(x1, y1).item<double>(), l2 = F::cross_entropy(x2, y2).item<double>();
  EXPECT_NEAR(logs.at("loss"), (3 * l1 + l2) / 4, 1e-7);
  EXPECT_EQ(logs.keys(), (std::vector<std::string>{"loss", "accuracy", "n"}));
  // The tensor form batches them itself (3 and 1 rows again): the same figures.
  train::Logs batched = trainer.evaluate(ug::cat({x1, x2}, 0), ug::cat({y1, y2}, 0), 3, 0);
  for (const std::string& key : logs.keys()) EXPECT_DOUBLE_EQ(batched.at(key), logs.at(key)) << key;
  EXPECT_THROW(trainer.evaluate(x1, y1, 0, 0), ug::ValueError);
}

TEST(Train, GradientAccumulationEqualsOneLargeBatch) {
  Batches small = classification_data(4, 8);
  std::vector<ug::data::Example> large;
  for (int i = 0; i < 4; i += 2)
    large.push_back(
        {ug::cat({small.all()[i][0], small.all()[i + 1][0]}), ug::cat({small.all()[i][1], small.all()[i + 1][1]})});
  Batches big(large);
  nn::Sequential a = mlp(), b = mlp();
  train::Trainer ta(a), tb(b);
  ta.compile({.optimizer = std::make_shared<optim::SGD>(a->parameters(), optim::SGDOptions(0.5).momentum(0.9)),
              .loss = "sparse_categorical_crossentropy",
              .gradient_accumulation_steps = 2});
  tb.compile({.optimizer = std::make_shared<optim::SGD>(b->parameters(), optim::SGDOptions(0.5).momentum(0.9)),
              .loss = "sparse_categorical_crossentropy"});
  ta.fit(small, {.epochs = 2, .verbose = 0});
  tb.fit(big, {.epochs = 2, .verbose = 0});
  auto pa = parameter_values(*a), pb = parameter_values(*b);
  for (size_t i = 0; i < pa.size(); ++i)
    for (size_t j = 0; j < pa[i].size(); ++j) EXPECT_NEAR(pa[i][j], pb[i][j], 1e-6);
}

TEST(Train, PartialAccumulationAtEpochEndIsTheMeanOfItsBatches) {
  // Three batches with k = 2: the third is stepped alone at the epoch's end, at full weight.
  Batches data = classification_data(3, 8);
  nn::Sequential a = mlp(), b = mlp();
  train::Trainer ta(a);
  ta.compile({.optimizer = std::make_shared<optim::SGD>(a->parameters(), optim::SGDOptions(0.1)),
              .loss = nn::CrossEntropyLoss(),
              .gradient_accumulation_steps = 2});
  ta.fit(data, {.epochs = 1, .verbose = 0});
  optim::SGD opt(b->parameters(), optim::SGDOptions(0.1));
  nn::CrossEntropyLoss loss_fn;
  for (int i : {0, 1}) loss_fn(b(data.all()[i][0]), data.all()[i][1]).div(2).backward();
  opt.step();
  opt.zero_grad();
  loss_fn(b(data.all()[2][0]), data.all()[2][1]).backward();
  opt.step();
  auto pa = parameter_values(*a), pb = parameter_values(*b);
  for (size_t i = 0; i < pa.size(); ++i)
    for (size_t j = 0; j < pa[i].size(); ++j) EXPECT_NEAR(pa[i][j], pb[i][j], 1e-7);
}

TEST(Train, GlobalClipnormIsClipGradNormBeforeTheStep) {
  Batches data = classification_data(3, 8);
  nn::Sequential a = mlp(), b = mlp();
  train::Trainer trainer(a);
  trainer.compile({.optimizer = std::make_shared<optim::SGD>(a->parameters(), optim::SGDOptions(1.0)),
                   .loss = nn::CrossEntropyLoss(),
                   .global_clipnorm = 0.05});
  trainer.fit(data, {.epochs = 1, .verbose = 0});
  optim::SGD opt(b->parameters(), optim::SGDOptions(1.0));
  nn::CrossEntropyLoss loss_fn;
  for (const auto& xy : data.all()) {
    loss_fn(b(xy[0]), xy[1]).backward();
    nn::utils::clip_grad_norm_(b->parameters(), 0.05);
    opt.step();
    opt.zero_grad();
  }
  EXPECT_EQ(parameter_values(*a), parameter_values(*b));
}

TEST(Train, ClipnormClipsEachGradientAndClipvalueEachElement) {
  Batches data = classification_data(1, 8);
  for (const bool by_value : {false, true}) {
    nn::Sequential a = mlp(), b = mlp();
    train::Trainer trainer(a);
    train::CompileOptions o{.optimizer = std::make_shared<optim::SGD>(a->parameters(), optim::SGDOptions(1.0)),
                            .loss = nn::CrossEntropyLoss()};
    (by_value ? o.clipvalue : o.clipnorm) = 0.01;
    trainer.compile(o);
    trainer.fit(data, {.epochs = 1, .verbose = 0});
    optim::SGD opt(b->parameters(), optim::SGDOptions(1.0));
    nn::CrossEntropyLoss()(b(data.all()[0][0]), data.all()[0][1]).backward();
    if (by_value) nn::utils::clip_grad_value_(b->parameters(), 0.01);
    else
      for (const Tensor& p : b->parameters()) nn::utils::clip_grad_norm_({p}, 0.01);
    opt.step();
    EXPECT_EQ(parameter_values(*a), parameter_values(*b)) << by_value;
  }
}

TEST(Train, CallbacksAreCalledInOrder) {
  Batches data = classification_data(2, 4);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  auto rec = std::make_shared<Recorder>();
  trainer.fit(data, {.epochs = 2, .callbacks = {rec}, .verbose = 0});
  EXPECT_EQ(rec->calls,
            (std::vector<std::string>{"train_begin", "epoch_begin 0", "batch_begin 0", "batch_end 0", "batch_begin 1",
                                      "batch_end 1", "epoch_end 0", "epoch_begin 1", "batch_begin 0", "batch_end 0",
                                      "batch_begin 1", "batch_end 1", "epoch_end 1", "train_end"}));
}

TEST(Train, InitialEpochAndStepsPerEpoch) {
  Batches data = classification_data(5, 4);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  auto rec = std::make_shared<Recorder>();
  auto history =
      trainer.fit(data, {.epochs = 3, .initial_epoch = 1, .callbacks = {rec}, .verbose = 0, .steps_per_epoch = 2});
  EXPECT_EQ(history->epoch, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(std::count(rec->calls.begin(), rec->calls.end(), "batch_end 1"), 2);
  EXPECT_EQ(std::count(rec->calls.begin(), rec->calls.end(), "batch_end 2"), 0);
  EXPECT_EQ(trainer.params().steps, 2);
}

TEST(Train, EarlyStoppingStopsAtTheRightEpochAndRestoresTheBestWeights) {
  Batches data = classification_data(2, 8);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  auto rec = std::make_shared<Recorder>();
  rec->scripted = {1.0, 0.5, 0.6, 0.7, 0.4, 0.3};
  auto stop = std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.patience = 2, .verbose = 1, .restore_best_weights = true});
  std::string printed;
  trainer.set_output(capture(printed, false));
  auto history = trainer.fit(data, {.epochs = 6, .callbacks = {rec, stop}, .verbose = 0});
  EXPECT_EQ(history->epoch, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(stop->stopped_epoch(), 3);
  EXPECT_EQ(stop->best_epoch(), 1);
  EXPECT_EQ(history->history.at("val_loss"), (std::vector<double>{1.0, 0.5, 0.6, 0.7}));
  for (const auto& [k, t] : model->state_dict()) EXPECT_EQ(values(t), values(rec->weights[1].at(k))) << k;
  EXPECT_NE(printed.find("Epoch 4: early stopping"), std::string::npos) << printed;
  EXPECT_NE(printed.find("best epoch: 2."), std::string::npos) << printed;
}

TEST(Train, EarlyStoppingMinDeltaModeAndBaseline) {
  Batches data = classification_data(1, 4);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  auto run = [&](std::vector<double> script, train::EarlyStoppingOptions o) {
    auto rec = std::make_shared<Recorder>();
    rec->scripted = std::move(script);
    auto stop = std::make_shared<train::EarlyStopping>(o);
    return trainer
        .fit(data, {.epochs = static_cast<int64_t>(rec->scripted.size()), .callbacks = {rec, stop}, .verbose = 0})
        ->epoch.size();
  };
  // Improvements of 0.01 are below min_delta: patience 1 stops after epoch 1.
  EXPECT_EQ(run({1.0, 0.99, 0.98, 0.97}, {.min_delta = 0.05, .patience = 1}), 2u);
  // mode max: rising values are improvements, so no stop.
  EXPECT_EQ(run({0.1, 0.2, 0.3, 0.4}, {.patience = 1, .mode = "max"}), 4u);
  // Epochs that improve but do not beat the baseline still count towards patience.
  EXPECT_EQ(run({1.0, 0.9, 0.95, 0.97, 0.8}, {.patience = 2}), 4u);
  EXPECT_EQ(run({1.0, 0.9, 0.95, 0.97, 0.8}, {.patience = 2, .baseline = 0.5}), 3u);
  EXPECT_THROW(train::EarlyStopping({.mode = "best"}), ug::ValueError);
}

TEST(Train, ModelCheckpointWritesTheBestEpochsWithFormattedNames) {
  const auto dir = std::filesystem::temp_directory_path() / ("ug_train_ckpt_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Batches data = classification_data(2, 8);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  auto rec = std::make_shared<Recorder>();
  rec->scripted = {0.9, 0.7, 0.8, 0.5};
  const std::string pattern = (dir / "sub" / "w.{epoch:02d}-{val_loss:.2f}.safetensors").string();
  auto best = std::make_shared<train::ModelCheckpoint>(pattern, train::ModelCheckpointOptions{.save_best_only = true});
  trainer.fit(data, {.epochs = 4, .callbacks = {rec, best}, .verbose = 0});
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir / "sub")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"w.01-0.90.safetensors", "w.02-0.70.safetensors", "w.04-0.50.safetensors"}));
  ug::io::TensorDict saved = ug::io::load_file((dir / "sub" / "w.02-0.70.safetensors").string());
  for (const auto& [k, t] : rec->weights[1]) EXPECT_EQ(values(saved.at(k)), values(t)) << k;

  // Every epoch, through a plugged-in save function.
  std::vector<std::string> saved_paths;
  auto every = std::make_shared<train::ModelCheckpoint>(
      "e{epoch}.bin", train::ModelCheckpointOptions{.save_weights_only = false,
                                                    .save = [&](train::Trainer& t, const std::string& path) {
                                                      EXPECT_EQ(&t, &trainer);
                                                      saved_paths.push_back(path);
                                                    }});
  trainer.fit(data, {.epochs = 2, .callbacks = {every}, .verbose = 0});
  EXPECT_EQ(saved_paths, (std::vector<std::string>{"e1.bin", "e2.bin"}));

  // A full, resumable checkpoint when weights only is off.
  auto full = std::make_shared<train::ModelCheckpoint>((dir / "run.ckpt").string(),
                                                       train::ModelCheckpointOptions{.save_weights_only = false});
  trainer.fit(data, {.epochs = 2, .callbacks = {full}, .verbose = 0});
  train::Progress progress =
      train::Checkpoint{.model = &trainer.module(), .optimizer = &trainer.optimizer(), .scheduler = {}}.load(
          (dir / "run.ckpt").string());
  EXPECT_EQ(progress.epoch, 2);
  std::filesystem::remove_all(dir);
}

TEST(Train, LearningRateSchedulerAndReduceLROnPlateau) {
  Batches data = classification_data(1, 4);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .learning_rate = 0.1, .loss = "sparse_categorical_crossentropy"});
  auto sched = std::make_shared<train::LearningRateScheduler>(
      [](int64_t epoch, double lr) { return epoch < 2 ? lr : lr * 0.5; });
  auto history = trainer.fit(data, {.epochs = 4, .callbacks = {sched}, .verbose = 0});
  EXPECT_EQ(history->history.at("learning_rate"), (std::vector<double>{0.1, 0.1, 0.05, 0.025}));

  trainer.compile({.optimizer = "sgd", .learning_rate = 1.0, .loss = "sparse_categorical_crossentropy"});
  auto rec = std::make_shared<Recorder>();
  rec->scripted = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  auto plateau = std::make_shared<train::ReduceLROnPlateau>(
      train::ReduceLROnPlateauOptions{.factor = 0.5, .patience = 2, .min_lr = 0.3});
  history = trainer.fit(data, {.epochs = 6, .callbacks = {rec, plateau}, .verbose = 0});
  // Epochs 1 and 2 do not improve on epoch 0: the cut comes at the end of epoch 2, then again
  // two epochs later, floored at min_lr. The logged rate is the one each epoch trained with.
  EXPECT_EQ(history->history.at("learning_rate"), (std::vector<double>{1.0, 1.0, 1.0, 0.5, 0.5, 0.3}));
}

TEST(Train, CsvLoggerWritesAHeaderAndOneRowPerEpoch) {
  const auto path = std::filesystem::temp_directory_path() / ("ug_train_log_" + std::to_string(::getpid()) + ".csv");
  Batches data = classification_data(1, 4);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  auto rec = std::make_shared<Recorder>();
  rec->scripted = {0.5, 0.25, 0.125};
  auto history = trainer.fit(
      data, {.epochs = 2, .callbacks = {rec, std::make_shared<train::CSVLogger>(path.string(), ";")}, .verbose = 0});
  auto read = [&] {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  auto row = [&](int e) {
    const auto& h = history->history;
    return std::to_string(e) + ";" + train::python_repr(h.at("accuracy")[e]) + ";" +
           train::python_repr(h.at("loss")[e]) + ";" + train::python_repr(h.at("val_loss")[e]) + "\n";
  };
  // Keras 3 logs a learning rate only from a callback that changes it.
  EXPECT_EQ(read(), "epoch;accuracy;loss;val_loss\n" + row(0) + row(1));
  history = trainer.fit(
      data,
      {.epochs = 1, .callbacks = {rec, std::make_shared<train::CSVLogger>(path.string(), ";", true)}, .verbose = 0});
  std::string text = read();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  EXPECT_EQ(text.find("epoch", 1), std::string::npos);  // no second header
  std::filesystem::remove(path);
}

TEST(Train, ProgressPrintsALinePerEpochOffTerminals) {
  Batches data = classification_data(3, 4);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  for (int verbose : {1, 2}) {
    std::string out;
    trainer.set_output(capture(out, false));
    trainer.fit(data, {.epochs = 2, .validation_data = &data, .verbose = verbose});
    EXPECT_EQ(out.find('\r'), std::string::npos);
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4) << out;
    EXPECT_EQ(out.rfind("Epoch 1/2\n3/3 - ", 0), 0u) << out;
    EXPECT_NE(out.find("/step - "), std::string::npos) << out;
    EXPECT_NE(out.find(" - loss: "), std::string::npos) << out;
    EXPECT_NE(out.find(" - accuracy: "), std::string::npos) << out;
    EXPECT_NE(out.find(" - val_loss: "), std::string::npos) << out;
    EXPECT_EQ(out.find("learning_rate"), std::string::npos) << out;
  }
  std::string out;
  trainer.set_output(capture(out, false));
  trainer.fit(data, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(out, "");
}

TEST(Train, ProgressRedrawsABarInPlaceOnTerminals) {
  Batches data = classification_data(3, 4);
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  std::string out;
  trainer.set_output(capture(out, true));
  trainer.fit(data, {.epochs = 1, .verbose = 1});
  EXPECT_EQ(out.rfind("Epoch 1/1\n\r1/3 [=========>....................] - ETA: ", 0), 0u) << out;
  EXPECT_NE(out.find("\r3/3 [==============================] - "), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_NE(out.find("samples/s"), std::string::npos) << out;
}

TEST(Train, PredictConcatenatesWithoutAutogradInEvalMode) {
  nn::Sequential model = mlp();
  model->train();
  ug::manual_seed(5);
  Tensor x = ug::randn({10, 4});
  train::Trainer trainer(model);
  Tensor y = trainer.predict(x, 4);
  EXPECT_EQ(y.shape(), ug::test::shape({10, 3}));
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(model->is_training());
  ug::test::expect_values(y, values(model(x)), 1e-6);
}

/** The (x, y) batches of batch_size rows of x and y from row `begin` to `end`, in order. */
Batches row_batches(const Tensor& x, const Tensor& y, int64_t begin, int64_t end, int64_t batch_size) {
  std::vector<ug::data::Example> out;
  for (int64_t i = begin; i < end; i += batch_size) {
    const int64_t n = std::min(batch_size, end - i);
    out.push_back({x.narrow(0, i, n), y.narrow(0, i, n)});
  }
  return Batches(out);
}

TEST(Train, ValidationSplitHoldsOutTheLastSamplesOfTensors) {
  ug::manual_seed(3);
  Tensor x = ug::randn({20, 4});
  Tensor y = x.narrow(1, 0, 3).argmax(1);
  nn::Sequential a = mlp(), b = mlp();
  train::Trainer split(a), by_hand(b);
  for (train::Trainer* t : {&split, &by_hand})
    t->compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  // 20 * 0.25 = 5 samples held out: the last ones, in batches of 4 like the training ones.
  auto history =
      split.fit(x, y, {.epochs = 2, .verbose = 0, .batch_size = 4, .shuffle = false, .validation_split = 0.25});
  Batches train_part = row_batches(x, y, 0, 15, 4), validation_part = row_batches(x, y, 15, 20, 4);
  auto expected = by_hand.fit(train_part, {.epochs = 2, .validation_data = &validation_part, .verbose = 0});
  EXPECT_EQ(parameter_values(*a), parameter_values(*b));
  EXPECT_EQ(history->history.at("loss"), expected->history.at("loss"));
  EXPECT_EQ(history->history.at("val_loss"), expected->history.at("val_loss"));
  EXPECT_EQ(split.params().steps, 4);

  auto message = [](auto&& f) {
    try {
      f();
    } catch (const ug::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no ValueError");
  };
  auto has = [](const std::string& m, const std::string& part) { return m.find(part) != std::string::npos; };
  std::string m = message([&] { split.fit(x, y, {.verbose = 0, .validation_split = 1.0}); });
  EXPECT_TRUE(has(m, "[fit] validation_split must be in [0, 1), got 1")) << m;
  m = message([&] { split.fit(x, y, {.verbose = 0, .validation_split = -0.5}); });
  EXPECT_TRUE(has(m, "validation_split must be in [0, 1)")) << m;
  m = message([&] { split.fit(x, y, {.validation_data = &validation_part, .verbose = 0, .validation_split = 0.5}); });
  EXPECT_TRUE(has(m, "[fit] give validation_split or validation_data, not both")) << m;
  m = message([&] { split.fit(x, y, {.verbose = 0, .validation_split = 0.99}); });
  EXPECT_TRUE(has(m, "[fit] validation_split=0.99 leaves no samples on one side of 20")) << m;
  // Keras's split point, floor(n * (1 - split)): 20 * 0.67 = 13.4 trains on 13 samples.
  split.fit(x, y, {.verbose = 0, .batch_size = 1, .validation_split = 0.33});
  EXPECT_EQ(split.params().steps, 13);
  m = message([&] { split.fit(train_part, {.verbose = 0, .validation_split = 0.5}); });
  EXPECT_TRUE(has(m, "[fit] validation_split needs array x and y")) << m;
  m = message([&] { split.fit(train_part, {.verbose = 0, .batch_size = 4}); });
  EXPECT_TRUE(has(m, "[fit] batch_size must not be given")) << m;
}

TEST(Train, BadArgumentsRaiseClearErrors) {
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  Batches data = classification_data(1, 4);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { trainer.fit(data); }).find("compile"), std::string::npos);
  EXPECT_THROW(trainer.fit(data), ug::RuntimeError);
  EXPECT_THROW(trainer.evaluate(data), ug::RuntimeError);
  std::string m = message([&] { trainer.compile({.optimizer = "adamax", .loss = "mse"}); });
  EXPECT_NE(m.find("\"rmsprop\""), std::string::npos) << m;
  m = message([&] { trainer.compile({.optimizer = "sgd", .loss = "crossentropy"}); });
  EXPECT_NE(m.find("\"sparse_categorical_crossentropy\""), std::string::npos) << m;
  m = message([&] { trainer.compile({.optimizer = "sgd", .loss = "mse", .metrics = {"precision"}}); });
  EXPECT_NE(m.find("\"sparse_categorical_accuracy\""), std::string::npos) << m;
  EXPECT_THROW(trainer.compile({.optimizer = "sgd", .loss = "mse", .metrics = {"mae", "mae"}}), ug::ValueError);
  EXPECT_FALSE(trainer.compiled());
  EXPECT_THROW(trainer.compile({.optimizer = "sgd", .loss = "mse", .clipnorm = 1.0, .clipvalue = 1.0}), ug::ValueError);
  EXPECT_THROW(trainer.compile({.optimizer = "sgd", .loss = "mse", .gradient_accumulation_steps = 0}), ug::ValueError);
  EXPECT_THROW(trainer.compile({.optimizer = "sgd"}), ug::ValueError);
  trainer.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  Batches one_field({{ug::zeros({2, 4})}});
  m = message([&] { trainer.fit(one_field, {.verbose = 0}); });
  EXPECT_NE(m.find("(x, y)"), std::string::npos) << m;
}

TEST(Train, SampleWeightsScaleEachSamplesLoss) {
  ug::manual_seed(4);
  Tensor x = ug::randn({10, 4}), y = ug::randn({10, 3});
  nn::Sequential model = mlp();
  train::Trainer trainer(model);
  trainer.compile({.optimizer = "sgd", .loss = "mse"});
  const double plain = trainer.evaluate(x, y, 4, 0).at("loss");
  EXPECT_NEAR(trainer.evaluate(x, y, 4, 0, ug::full({10}, 2.0)).at("loss"), 2 * plain, 1e-6);
  // Weight 1 for the first half, 0 for the rest: sum(w * loss) / batch size, as Keras reduces.
  Tensor half = ug::cat({ug::ones({5}), ug::zeros({5})}, 0);
  const double first = trainer.evaluate(x.narrow(0, 0, 5), y.narrow(0, 0, 5), 10, 0).at("loss");
  EXPECT_NEAR(trainer.evaluate(x, y, 10, 0, half).at("loss"), first / 2, 1e-6);
}

TEST(Train, PythonStyleFormatting) {
  EXPECT_EQ(train::python_repr(0.1), "0.1");
  EXPECT_EQ(train::python_repr(1e-5), "1e-05");
  EXPECT_EQ(train::python_repr(0.0001), "0.0001");
  EXPECT_EQ(train::python_repr(3.0), "3.0");
  EXPECT_EQ(train::python_repr(-2.5e16), "-2.5e+16");
  EXPECT_EQ(train::python_repr(123.456), "123.456");
  train::Logs logs{{"val_loss", 0.123456}, {"acc", 0.5}};
  EXPECT_EQ(train::format_fields("m.{epoch:02d}-{val_loss:.4f}.st", 3, logs, "t"), "m.03-0.1235.st");
  EXPECT_EQ(train::format_fields("{epoch}_{acc}_{acc:.1%}_{{x}}_{val_loss:+.2e}", 12, logs, "t"),
            "12_0.5_50.0%_{x}_+1.23e-01");
  EXPECT_THROW(train::format_fields("{val_acc}", 1, logs, "t"), ug::ValueError);
  EXPECT_THROW(train::format_fields("{epoch:>4}", 1, logs, "t"), ug::ValueError);
  EXPECT_THROW(train::format_fields("{epoch", 1, logs, "t"), ug::ValueError);
}

}  // namespace
