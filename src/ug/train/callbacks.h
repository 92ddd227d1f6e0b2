// Keras's built-in callbacks (keras.callbacks): EarlyStopping, ModelCheckpoint,
// LearningRateScheduler, ReduceLROnPlateau and CSVLogger, with Keras's arguments and rules.
// Epochs count from 0 in the hooks and from 1 in messages and file names, as in Keras.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ug/nn/module.h"
#include "ug/optim/lr_scheduler.h"
#include "ug/train/callback.h"

namespace ug::train {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  /** A change smaller than this is no improvement. */
  double min_delta = 0;
  /** Epochs without improvement before stopping. */
  int64_t patience = 0;
  int verbose = 0;
  /** "auto" (max for accuracies), "min" or "max". */
  std::string mode = "auto";
  /** Training stops unless the monitored value gets better than this within `patience` epochs. */
  std::optional<double> baseline;
  /** At the end of training, put back the weights of the best epoch. */
  bool restore_best_weights = false;
};

/** Stops training when the monitored metric has stopped improving. */
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;

  /** The epoch training stopped after (0 when it did not stop early). */
  int64_t stopped_epoch() const { return stopped_epoch_; }
  int64_t best_epoch() const { return best_epoch_; }
  std::optional<double> best() const { return best_; }
  int64_t wait() const { return wait_; }

 private:
  bool improves(double value, std::optional<double> reference) const;
  EarlyStoppingOptions o_;
  bool maximize_;
  int64_t wait_ = 0, stopped_epoch_ = 0, best_epoch_ = 0;
  std::optional<double> best_;
  nn::TensorDict best_weights_;
  bool warned_ = false;
};

/** Writes a checkpoint to `path`: ModelCheckpoint's way of saving. */
using SaveFn = std::function<void(Trainer& trainer, const std::string& path)>;

/** Writes the module's state dict (parameters and persistent buffers) to a safetensors file. */
void save_weights(const nn::Module& module, const std::string& path);

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;
  /** Save only when the monitored metric improves on the best so far. */
  bool save_best_only = false;
  /** Keras's flag: true writes the weights (save_weights); false writes a full, resumable
   *  Checkpoint (model, optimizer, RNG, the epochs done). A `save` function overrides both. */
  bool save_weights_only = true;
  std::string mode = "auto";
  /** With save_best_only: the value to beat before the first save. */
  std::optional<double> initial_value_threshold;
  /** How to write a checkpoint; unset: as save_weights_only says. Under a data-parallel fit
   *  it runs on every rank (a collective save needs them all); the built-in ways write on rank
   *  0, the full Checkpoint with every rank's RNG state. */
  SaveFn save;
};

/** Saves the model after each epoch to `filepath`, formatted with the epoch (from 1) and the
 *  logs: "ckpt/weights.{epoch:02d}-{val_loss:.2f}.safetensors". Directories are created. */
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  std::optional<double> best() const { return best_; }

 private:
  std::string filepath_;
  ModelCheckpointOptions o_;
  bool maximize_;
  std::optional<double> best_;
};

/** The lr for an epoch (from 0) given the current one. */
using Schedule = std::function<double(int64_t epoch, double lr)>;

/** Sets the optimizer's lr at the start of every epoch to schedule(epoch, lr), and logs it
 *  as "learning_rate" at the epoch's end (as Keras 3: fit logs no lr otherwise). */
class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(Schedule schedule, int verbose = 0);
  void on_epoch_begin(int64_t epoch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;

 private:
  Schedule schedule_;
  int verbose_;
};

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  /** Epochs without improvement before the lr is cut (Keras's count). */
  int64_t patience = 10;
  int verbose = 0;
  std::string mode = "auto";
  /** Improvements smaller than this (absolute) do not count. */
  double min_delta = 1e-4;
  /** Epochs to wait after a cut before counting again. */
  int64_t cooldown = 0;
  double min_lr = 0;
};

/** Cuts the lr by `factor` when the monitored metric stops improving: Keras's callback over
 *  optim::lr_scheduler::ReduceLROnPlateau (torch's rule, with Keras's patience: a cut after
 *  `patience` epochs without improvement). Logs the epoch's lr, before any cut, as "learning_rate". */
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;

 private:
  ReduceLROnPlateauOptions o_;
  /** Made at the first epoch's end, when the optimizer is the one training uses. */
  std::unique_ptr<optim::lr_scheduler::ReduceLROnPlateau> scheduler_;
};

/** Writes each epoch's logs to a CSV file: a header "epoch,<keys sorted>", then one row per
 *  epoch (from 0), "NA" for a key missing from an epoch. append: add to an existing file (with
 *  no second header). */
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, std::string separator = ",", bool append = false);
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;
  bool chief_only() const override { return true; }

 private:
  std::string filename_, separator_;
  bool append_;
  bool header_needed_ = true;
  std::vector<std::string> keys_;
  std::ofstream file_;
};

}  // namespace ug::train
