// `ug train`: trains a built-in model on Fashion-MNIST (or files given by path) with the
// Keras-style loop, then writes the model, a resumable checkpoint, CSV and TensorBoard logs and
// an SVG chart of the metrics per epoch into the output folder.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numbers>
#include <thread>

#include "cli.h"
#include "data.h"
#include "ug/compiler/jit.h"
#include "ug/core/error.h"
#include "ug/core/random.h"
#include "ug/core/thread_pool.h"
#include "ug/data/csv.h"
#include "ug/data/data_loader.h"
#include "ug/data/datasets.h"
#include "ug/data/sampler.h"
#include "ug/distributed/distributed.h"
#include "ug/graph/profile.h"
#include "ug/log/history_chart.h"
#include "ug/models/zoo.h"
#include "ug/ops/reduce.h"
#include "ug/train/checkpoint.h"
#include "ug/train/train.h"

namespace ug::cli {

namespace {

namespace fs = std::filesystem;

struct TrainFlags {
  std::string model = "mlp", optimizer = "adam", schedule = "constant", out;
  int64_t epochs = 3, batch_size = 64, threads = 0, workers = 2, seed = 0, verbose = 1;
  std::optional<double> lr;
  bool resume = false;
  std::string profile;  // --profile PATH: a Chrome trace of the first training steps
  bool jit = false;     // --jit: the training step as a compiled program
  int64_t nproc = 0;    // --nproc N: N processes under mpirun, training data-parallel
  std::string hostfile;
};

/** The size of the MPI job this process belongs to (OpenMPI's environment), 0 outside one. */
int64_t mpi_world_size() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size ? std::atoll(size) : 0;
}

/** Profiles the first `steps` batches fit trains and writes their Chrome trace to `path`. */
class ProfileSteps : public train::Callback {
 public:
  ProfileSteps(std::string path, int64_t steps) : path_(std::move(path)), steps_left_(steps) {}
  void on_train_batch_begin(int64_t, train::Logs&) override {
    if (!profile_ && !written_)
      profile_ = std::make_unique<profiler::Profile>(profiler::Options{.record_shapes = true});
  }
  void on_train_batch_end(int64_t, train::Logs&) override {
    if (profile_ && --steps_left_ == 0) write();
  }
  void on_train_end(train::Logs&) override {
    if (profile_) write();
  }
  bool chief_only() const override { return true; }  // one trace, from rank 0

 private:
  void write() {
    profile_->stop();
    profile_->export_chrome_trace(path_);
    std::printf("wrote a Chrome trace of the first training steps to %s\n", path_.c_str());
    profile_.reset();
    written_ = true;
  }
  std::string path_;
  int64_t steps_left_;
  std::unique_ptr<profiler::Profile> profile_;
  bool written_ = false;
};

/** The lr of epoch e (from 0) for a run of `epochs` starting at `base`. */
train::Schedule make_schedule(const std::string& name, double base, int64_t epochs) {
  if (name == "step")  // x0.1 at half and at three quarters of the run, as the classic recipes do
    return [=](int64_t e, double) { return base * std::pow(0.1, (2 * e >= epochs) + (4 * e >= 3 * epochs)); };
  return [=](int64_t e, double) {  // cosine: from base down towards 0 at the last epoch's end
    return base * 0.5 * (1 + std::cos(std::numbers::pi * static_cast<double>(e) / static_cast<double>(epochs)));
  };
}

/** The metrics per epoch in metrics.csv (all epochs, also those before a --resume). */
logging::MetricHistory read_history(const fs::path& csv) {
  data::CsvTable table =
      data::read_csv_table(csv.string(), {.delimiter = ',', .header = true, .dtype = DType::Float64});
  logging::MetricHistory history;
  for (const char* name : {"loss", "val_loss", "accuracy", "val_accuracy"})
    for (size_t c = 0; c < table.columns.size(); ++c)
      if (table.columns[c] == name) {
        Tensor column = table.data.select(1, static_cast<int64_t>(c)).contiguous();
        history.emplace_back(
            name, std::vector<double>(column.data_ptr<double>(), column.data_ptr<double>() + column.numel()));
      }
  return history;
}

}  // namespace

int run_train(const Args& args) {
  TrainFlags f;
  DataFlags data;
  for (size_t i = 0; i < args.size(); ++i) {
    if (parse_data_flag(args, i, data)) continue;
    const std::string_view name = option_name(args[i]);
    if (name == "--model") f.model = option_value(args, i);
    else if (name == "--epochs") f.epochs = parse_int(name, option_value(args, i), 1, 100000);
    else if (name == "--batch-size") f.batch_size = parse_int(name, option_value(args, i), 1, 1 << 20);
    else if (name == "--optimizer") f.optimizer = option_value(args, i);
    else if (name == "--lr") f.lr = parse_double(name, option_value(args, i), 0, 1e3);
    else if (name == "--schedule") f.schedule = option_value(args, i);
    else if (name == "--threads") f.threads = parse_int(name, option_value(args, i), 1, 1024);
    else if (name == "--workers") f.workers = parse_int(name, option_value(args, i), 0, 64);
    else if (name == "--seed") f.seed = parse_int(name, option_value(args, i), 0, INT64_MAX);
    else if (name == "--out") f.out = option_value(args, i);
    else if (name == "--verbose") f.verbose = parse_int(name, option_value(args, i), 0, 2);
    else if (name == "--resume") f.resume = true;
    else if (name == "--profile") f.profile = option_value(args, i);
    else if (name == "--jit") f.jit = true;
    else if (name == "--nproc") f.nproc = parse_int(name, option_value(args, i), 1, 1 << 20);
    else if (name == "--hostfile") f.hostfile = option_value(args, i);
    else throw UsageError("unknown option '" + std::string(args[i]) + "'");
  }
  const int64_t job = mpi_world_size();
  if (f.nproc > 0 && job == 0) {
    // Not under mpirun yet: start N copies of this command through `ug launch`'s mpirun line.
    std::vector<std::string> command = {fs::read_symlink("/proc/self/exe").string(), "train"};
    command.insert(command.end(), args.begin(), args.end());
    return exec_mpirun(mpirun_line(f.nproc, f.hostfile, command), false);
  }
  if (f.nproc > 0 && f.nproc != job) fail("[train] --nproc ", f.nproc, " but this MPI job has ", job, " processes");
  if (f.schedule != "constant" && f.schedule != "step" && f.schedule != "cosine")
    throw UsageError("--schedule expects constant, step or cosine, got '" + f.schedule + "'");
  if (f.out.empty()) f.out = "runs/" + f.model;
  // Under mpirun (--nproc, or started by mpirun directly) every process is one replica.
  std::shared_ptr<train::MirroredStrategy> strategy = job > 0 ? train::MirroredStrategy::make() : nullptr;
  const int rank = strategy ? strategy->group()->rank() : 0;
  const int64_t replicas = strategy ? strategy->num_replicas_in_sync() : 1;
  if (f.batch_size % replicas != 0)
    throw UsageError("--batch-size is the global batch, split evenly over the " + std::to_string(replicas) +
                     " processes: " + std::to_string(f.batch_size) + " is not a multiple of " +
                     std::to_string(replicas));
  // Only rank 0 prints.
  auto say = [rank](const char* format, auto... values) {
    if (rank == 0) std::printf(format, values...);
  };
  if (f.threads > 0) set_num_threads(static_cast<int>(f.threads));
  else if (replicas > 1)  // the processes on one host share its cores
    set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency() / replicas)));
  manual_seed(static_cast<uint64_t>(f.seed));

  Split train_split = load_split(data, true), test_split = load_split(data, false);
  models::Architecture arch{f.model, {}};
  arch.config["classes"] = std::max<int64_t>(2, max(train_split.labels).item<int64_t>() + 1);
  if (f.model == "mlp") arch.config["in_features"] = train_split.images[0].numel();
  auto model = models::build(arch);
  train::Trainer trainer(model);
  trainer.compile({.optimizer = f.optimizer,
                   .learning_rate = f.lr,
                   .loss = "sparse_categorical_crossentropy",
                   .metrics = {"accuracy"},
                   .jit_compile = f.jit ? jit_step_compiler() : train::StepCompiler(),
                   .strategy = strategy});

  const fs::path out(f.out);
  if (rank == 0) fs::create_directories(out);
  const fs::path checkpoint = out / "checkpoint.safetensors", model_path = out / "model.safetensors",
                 metrics = out / "metrics.csv", chart = out / "history.svg", logs = out / "logs";
  int64_t initial_epoch = 0;
  if (f.resume) {
    if (!fs::exists(checkpoint)) fail("[train] --resume: no checkpoint at ", checkpoint.string());
    initial_epoch =
        train::Checkpoint{
            .model = model.get(), .optimizer = &trainer.optimizer(), .scheduler = {}, .group = trainer.process_group()}
            .load(checkpoint.string())
            .epoch;
    say("resuming from %s after epoch %lld\n", checkpoint.c_str(), static_cast<long long>(initial_epoch));
  }
  say("training %s (%lld parameters) on %lld images, testing on %lld; %s, lr %g, batch %lld, %lld epochs\n",
      f.model.c_str(), static_cast<long long>(model->num_parameters()),
      static_cast<long long>(train_split.labels.numel()), static_cast<long long>(test_split.labels.numel()),
      f.optimizer.c_str(), trainer.learning_rate(), static_cast<long long>(f.batch_size),
      static_cast<long long>(f.epochs));
  if (replicas > 1)
    say("on %lld processes, %lld samples each per step\n", static_cast<long long>(replicas),
        static_cast<long long>(f.batch_size / replicas));
  std::fflush(stdout);

  // Each process its shard (one process: all of it), reshuffled per epoch by (seed, epoch).
  auto train_data = std::make_shared<data::TensorDataset>(std::vector<Tensor>{train_split.images, train_split.labels});
  data::DataLoader train_loader(
      train_data, {.batch_size = f.batch_size / replicas,
                   .sampler = std::make_shared<data::DistributedSampler>(train_data->size(), replicas, rank, true,
                                                                         static_cast<uint64_t>(f.seed)),
                   .num_workers = static_cast<int>(f.workers)});
  // Each process evaluates its share of the test images; the figures are the whole set's.
  std::unique_ptr<data::BatchSource> test_batches =
      trainer.evaluation_batches(test_split.images, test_split.labels, 1000 * replicas);
  // The schedule first: it logs each epoch's rate, which the CSV file then records.
  std::vector<std::shared_ptr<train::Callback>> callbacks;
  if (f.schedule != "constant")
    callbacks.push_back(
        std::make_shared<train::LearningRateScheduler>(make_schedule(f.schedule, trainer.learning_rate(), f.epochs)));
  callbacks.push_back(std::make_shared<train::CSVLogger>(metrics.string(), ",", /*append=*/f.resume));
  callbacks.push_back(std::make_shared<train::TensorBoard>(logs.string()));
  callbacks.push_back(std::make_shared<train::ModelCheckpoint>(
      checkpoint.string(), train::ModelCheckpointOptions{.save_weights_only = false}));
  if (!f.profile.empty()) callbacks.push_back(std::make_shared<ProfileSteps>(f.profile, 5));
  if (initial_epoch < f.epochs)
    trainer.fit(train_loader, {.epochs = f.epochs,
                               .initial_epoch = initial_epoch,
                               .validation_data = test_batches.get(),
                               .callbacks = callbacks,
                               .verbose = static_cast<int>(f.verbose)});

  train::Logs result = trainer.evaluate(*test_batches, 0);
  if (rank != 0) return 0;
  models::save_model(*model, arch, model_path.string());
  logging::plot_history(read_history(metrics), chart.string(), f.model + " on " + data.data);
  std::printf("test accuracy %.4f, test loss %.4f\n", result.at("accuracy"), result.at("loss"));
  std::printf("wrote %s, %s, %s, %s and %s/\n", model_path.c_str(), checkpoint.c_str(), metrics.c_str(), chart.c_str(),
              logs.c_str());
  return 0;
}

}  // namespace ug::cli
