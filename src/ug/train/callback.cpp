#include "ug/train/callback.h"

#include "ug/core/error.h"

namespace ug::train {

Trainer& Callback::trainer() const {
  if (!trainer_) fail<RuntimeError>("[Callback] not attached to a trainer: callbacks reach the model during fit");
  return *trainer_;
}

void History::on_train_begin(Logs&) {
  epoch.clear();
  history = {};
}

void History::on_epoch_end(int64_t e, Logs& logs) {
  epoch.push_back(e);
  for (const auto& [name, value] : logs) {
    if (std::vector<double>* values = history.find(name)) values->push_back(value);
    else history.insert(name, {value});
  }
}

bool monitor_maximizes(const std::string& monitor, const std::string& mode, const char* who) {
  if (mode == "min") return false;
  if (mode == "max") return true;
  if (mode != "auto") fail<ValueError>("[", who, "] mode must be \"auto\", \"min\" or \"max\", got \"", mode, "\"");
  auto ends_with = [&](const std::string& suffix) {
    return monitor.size() >= suffix.size() &&
           monitor.compare(monitor.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("acc") || ends_with("accuracy") || ends_with("auc");
}

}  // namespace ug::train
