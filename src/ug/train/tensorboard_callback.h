// Keras's TensorBoard callback: each epoch's logs as TensorBoard scalars, training metrics in
// <log_dir>/train and validation ones in <log_dir>/validation, under Keras's tags
// ("epoch_loss", "epoch_accuracy", "epoch_learning_rate"), so both runs share one chart.
#pragma once

#include <memory>
#include <string>

#include "ug/log/summary_writer.h"
#include "ug/train/callback.h"

namespace ug::train {

class TensorBoard : public Callback {
 public:
  explicit TensorBoard(std::string log_dir = "logs");
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;
  bool chief_only() const override { return true; }

 private:
  /** The writer of <log_dir>/train or /validation, opened at its first scalar. */
  logging::SummaryWriter& writer(bool validation);

  std::string log_dir_;
  std::unique_ptr<logging::SummaryWriter> train_, validation_;
};

}  // namespace ug::train
