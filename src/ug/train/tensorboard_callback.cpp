#include "ug/train/tensorboard_callback.h"

#include <filesystem>

#include "ug/train/trainer.h"

namespace ug::train {

TensorBoard::TensorBoard(std::string log_dir) : log_dir_(std::move(log_dir)) {}

logging::SummaryWriter& TensorBoard::writer(bool validation) {
  std::unique_ptr<logging::SummaryWriter>& w = validation ? validation_ : train_;
  if (!w)
    w = std::make_unique<logging::SummaryWriter>(
        (std::filesystem::path(log_dir_) / (validation ? "validation" : "train")).string());
  return *w;
}

void TensorBoard::on_epoch_end(int64_t epoch, Logs& epoch_logs) {
  Logs logs = epoch_logs;  // Keras's TensorBoard writes the rate too, without adding it to the history
  logs.insert("learning_rate", trainer().learning_rate());
  for (const auto& [key, value] : logs) {
    const bool validation = key.starts_with("val_");
    writer(validation).add_scalar("epoch_" + (validation ? key.substr(4) : key), value, epoch);
  }
}

void TensorBoard::on_train_end(Logs& /*logs*/) {
  for (auto* w : {&train_, &validation_})
    if (*w) (*w)->close();
}

}  // namespace ug::train
