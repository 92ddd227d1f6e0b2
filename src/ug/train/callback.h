// ug::train::Callback: the hooks the training loop calls at the start and end of training,
// of each epoch and of each batch, as keras.callbacks.Callback. Logs carry the metrics (running
// means during an epoch); a callback may add entries, which later callbacks and History see.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ug/core/ordered_dict.h"

namespace ug::train {

class Trainer;

/** Metric name -> value ("loss", "accuracy", "val_loss", "learning_rate"), in the order they were computed. */
using Logs = OrderedDict<double>;

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(Logs& /*logs*/) {}
  virtual void on_train_end(Logs& /*logs*/) {}
  virtual void on_epoch_begin(int64_t /*epoch*/, Logs& /*logs*/) {}
  virtual void on_epoch_end(int64_t /*epoch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_begin(int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_end(int64_t /*batch*/, Logs& /*logs*/) {}
  /** True for callbacks that only write files or print (CSVLogger, TensorBoard): when fit
   *  trains data-parallel they run on rank 0 alone. The others run on every rank, seeing the
   *  same (averaged) logs, so decisions such as EarlyStopping's agree. */
  virtual bool chief_only() const { return false; }

  /** The trainer running fit (Keras's callback.model): its module, optimizer, stop_training. */
  Trainer& trainer() const;
  bool has_trainer() const { return trainer_ != nullptr; }
  void set_trainer(Trainer* trainer) { trainer_ = trainer; }

 private:
  Trainer* trainer_ = nullptr;
};

/** Records each epoch's logs: what fit returns (keras.callbacks.History). */
class History : public Callback {
 public:
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;

  /** The epochs run (from 0), and for each metric its value at each of them. */
  std::vector<int64_t> epoch;
  OrderedDict<std::vector<double>> history;
};

/** Whether larger values of a monitored metric are better: mode "min", "max", or "auto"
 *  (max for names ending in "acc", "accuracy" or "auc", as Keras decides). `who` names the
 *  caller in the error for another mode. */
bool monitor_maximizes(const std::string& monitor, const std::string& mode, const char* who);

}  // namespace ug::train
