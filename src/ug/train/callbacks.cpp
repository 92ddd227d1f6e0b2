#include "ug/train/callbacks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "ug/graph/grad_mode.h"
#include "ug/core/error.h"
#include "ug/io/safetensors.h"
#include "ug/train/checkpoint.h"
#include "ug/train/format.h"
#include "ug/train/trainer.h"

namespace ug::train {

namespace {

std::string fixed5(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.5f", v);
  return buf;
}

std::string available(const Logs& logs) {
  std::string s;
  for (const std::string& k : logs.keys()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

// ---- EarlyStopping ---------------------------------------------------------------------

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : o_(std::move(options)), maximize_(monitor_maximizes(o_.monitor, o_.mode, "EarlyStopping")) {
  if (o_.patience < 0) fail<ValueError>("[EarlyStopping] patience must be non-negative, got ", o_.patience);
  o_.min_delta = std::abs(o_.min_delta);
}

bool EarlyStopping::improves(double value, std::optional<double> reference) const {
  if (!reference) return true;
  return maximize_ ? value - o_.min_delta > *reference : value + o_.min_delta < *reference;
}

void EarlyStopping::on_train_begin(Logs&) {
  wait_ = stopped_epoch_ = best_epoch_ = 0;
  best_.reset();
  best_weights_ = {};
  warned_ = false;
}

void EarlyStopping::on_epoch_end(int64_t epoch, Logs& logs) {
  const double* current = logs.find(o_.monitor);
  if (!current) {
    if (!warned_)
      trainer().output().line("Early stopping conditioned on metric `" + o_.monitor +
                              "` which is not available. Available metrics are: " + available(logs));
    warned_ = true;
    return;
  }
  auto snapshot = [&] {
    NoGradGuard no_grad;
    best_weights_ = {};
    for (const auto& [name, t] : trainer().module().state_dict()) best_weights_.insert(name, t.detach().clone());
  };
  if (o_.restore_best_weights && best_weights_.empty()) snapshot();
  ++wait_;
  if (improves(*current, best_)) {
    best_ = *current;
    best_epoch_ = epoch;
    if (o_.restore_best_weights) snapshot();
    // With a baseline, an epoch must also beat it to reset the count.
    if (!o_.baseline || improves(*current, o_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= o_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    trainer().stop_training = true;
  }
}

void EarlyStopping::on_train_end(Logs&) {
  if (stopped_epoch_ > 0 && o_.verbose > 0)
    trainer().output().line("Epoch " + std::to_string(stopped_epoch_ + 1) + ": early stopping");
  if (o_.restore_best_weights && !best_weights_.empty()) {
    if (o_.verbose > 0)
      trainer().output().line(
          "Restoring model weights from the end of the best epoch: " + std::to_string(best_epoch_ + 1) + ".");
    trainer().module().load_state_dict(best_weights_);
  }
}

// ---- ModelCheckpoint -------------------------------------------------------------------

void save_weights(const nn::Module& module, const std::string& path) { io::save_file(module.state_dict(), path); }

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : filepath_(std::move(filepath)),
      o_(std::move(options)),
      maximize_(monitor_maximizes(o_.monitor, o_.mode, "ModelCheckpoint")),
      best_(o_.initial_value_threshold) {
  if (filepath_.empty()) fail<ValueError>("[ModelCheckpoint] filepath is empty");
}

void ModelCheckpoint::on_epoch_end(int64_t epoch, Logs& logs) {
  const std::string path = format_fields(filepath_, epoch + 1, logs, "ModelCheckpoint");
  const std::string when = "Epoch " + std::to_string(epoch + 1) + ": ";
  if (o_.save_best_only) {
    const double* current = logs.find(o_.monitor);
    if (!current) {
      trainer().output().line("Can save best model only with " + o_.monitor + " available, skipping.");
      return;
    }
    const double best =
        best_.value_or(maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
    if (!(maximize_ ? *current > best : *current < best)) {
      if (o_.verbose > 0) trainer().output().line(when + o_.monitor + " did not improve from " + fixed5(best));
      return;
    }
    if (o_.verbose > 0)
      trainer().output().line(when + o_.monitor + " improved from " + fixed5(best) + " to " + fixed5(*current) +
                              ", saving model to " + path);
    best_ = *current;
  } else if (o_.verbose > 0) {
    trainer().output().line(when + "saving model to " + path);
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && trainer().rank() == 0) std::filesystem::create_directories(dir);
  if (o_.save) o_.save(trainer(), path);
  else if (o_.save_weights_only) {
    if (trainer().rank() == 0) save_weights(trainer().module(), path);  // the replicas hold the same weights
  } else {  // the whole run's state: resumable with Checkpoint::load (epochs done so far as its epoch)
    Checkpoint{.model = &trainer().module(),
               .optimizer = &trainer().optimizer(),
               .scheduler = {},
               .scaler = trainer().loss_scaler(),
               .group = trainer().process_group()}
        .save(path, {.epoch = epoch + 1, .step = 0, .extra = {}});
  }
}

// ---- LearningRateScheduler -------------------------------------------------------------

LearningRateScheduler::LearningRateScheduler(Schedule schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  if (!schedule_) fail<ValueError>("[LearningRateScheduler] the schedule is empty");
}

void LearningRateScheduler::on_epoch_begin(int64_t epoch, Logs&) {
  const double lr = schedule_(epoch, trainer().learning_rate());
  if (!std::isfinite(lr) || lr < 0)
    fail<ValueError>("[LearningRateScheduler] the schedule gave the learning rate ", lr, " for epoch ", epoch);
  trainer().set_learning_rate(lr);
  if (verbose_ > 0)
    trainer().output().line("Epoch " + std::to_string(epoch + 1) + ": LearningRateScheduler setting learning rate to " +
                            python_repr(lr) + ".");
}

void LearningRateScheduler::on_epoch_end(int64_t, Logs& logs) {
  logs.insert("learning_rate", trainer().learning_rate());
}

// ---- ReduceLROnPlateau -----------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options) : o_(std::move(options)) {
  if (!(o_.factor < 1.0) || !(o_.factor >= 0))
    fail<ValueError>("[ReduceLROnPlateau] factor must be in [0, 1), got ", o_.factor);
  if (o_.patience < 0) fail<ValueError>("[ReduceLROnPlateau] patience must be non-negative, got ", o_.patience);
  monitor_maximizes(o_.monitor, o_.mode, "ReduceLROnPlateau");  // checks the mode
}

void ReduceLROnPlateau::on_train_begin(Logs&) { scheduler_.reset(); }

void ReduceLROnPlateau::on_epoch_end(int64_t epoch, Logs& logs) {
  logs.insert("learning_rate", trainer().learning_rate());
  const double* current = logs.find(o_.monitor);
  if (!current) {
    trainer().output().line("Learning rate reduction is conditioned on metric `" + o_.monitor +
                            "` which is not available. Available metrics are: " + available(logs));
    return;
  }
  if (!scheduler_) {
    // torch counts bad epochs past `patience` (num_bad > patience), Keras up to it (wait >= patience).
    optim::lr_scheduler::ReduceLROnPlateauOptions t;
    t.mode = monitor_maximizes(o_.monitor, o_.mode, "ReduceLROnPlateau") ? "max" : "min";
    t.factor = o_.factor;
    t.patience = std::max<int64_t>(o_.patience - 1, 0);
    t.threshold = o_.min_delta;
    t.threshold_mode = "abs";
    t.cooldown = o_.cooldown;
    t.min_lr = {o_.min_lr};
    scheduler_ = std::make_unique<optim::lr_scheduler::ReduceLROnPlateau>(trainer().optimizer(), t);
  }
  const double before = trainer().learning_rate();
  scheduler_->step(*current);
  const double after = trainer().learning_rate();
  if (after < before && o_.verbose > 0)
    trainer().output().line("Epoch " + std::to_string(epoch + 1) + ": ReduceLROnPlateau reducing learning rate to " +
                            python_repr(after) + ".");
}

// ---- CSVLogger -------------------------------------------------------------------------

CSVLogger::CSVLogger(std::string filename, std::string separator, bool append)
    : filename_(std::move(filename)), separator_(std::move(separator)), append_(append) {
  if (filename_.empty()) fail<ValueError>("[CSVLogger] filename is empty");
}

void CSVLogger::on_train_begin(Logs&) {
  std::error_code ec;
  header_needed_ =
      !append_ || !std::filesystem::exists(filename_, ec) || std::filesystem::file_size(filename_, ec) == 0;
  keys_.clear();
  file_.close();
  file_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
  if (!file_) fail<RuntimeError>("[CSVLogger] cannot open \"", filename_, "\" for writing");
}

void CSVLogger::on_epoch_end(int64_t epoch, Logs& logs) {
  if (keys_.empty()) {
    keys_ = logs.keys();
    std::sort(keys_.begin(), keys_.end());
    if (header_needed_) {
      file_ << "epoch";
      for (const std::string& k : keys_) file_ << separator_ << k;
      file_ << '\n';
    }
  }
  file_ << epoch;
  for (const std::string& k : keys_) {
    const double* v = logs.find(k);
    file_ << separator_ << (v ? python_repr(*v) : "NA");
  }
  file_ << '\n';
  file_.flush();
}

void CSVLogger::on_train_end(Logs&) { file_.close(); }

}  // namespace ug::train
