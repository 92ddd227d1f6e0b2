// The metrics compile() takes, by Keras's names or as functions, and their running means.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::train {

/** metric(output, target) -> the batch's mean value (a one-element tensor), in torch's argument order. */
using MetricFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

/** A metric: a name (its key in the logs) and its function, left empty for a known name. */
struct Metric {
  Metric(const char* name) : name(name) {}
  Metric(std::string name) : name(std::move(name)) {}
  Metric(std::string name, MetricFn fn) : name(std::move(name)), fn(std::move(fn)) {}
  std::string name;
  MetricFn fn;
};

/** The names metric_by_name knows, for error messages. */
const std::vector<std::string>& metric_names();

/** The metric of that name: "accuracy"/"acc" (the kind of accuracy that fits the loss:
 *  sparse categorical for sparse_categorical_crossentropy, categorical for
 *  categorical_crossentropy, binary for binary_crossentropy, chosen from the output and target
 *  shapes otherwise, as Keras does), "sparse_categorical_accuracy", "categorical_accuracy",
 *  "binary_accuracy", "mae"/"mean_absolute_error", "mse"/"mean_squared_error",
 *  "top_k_categorical_accuracy" (one-hot targets) and "sparse_top_k_categorical_accuracy"
 *  (class indices), with Keras's k = 5.
 *  from_logits sets binary accuracy's threshold (0 for logits, 0.5 for probabilities).
 *  Unknown names raise a ValueError listing the known ones. */
MetricFn metric_by_name(const std::string& name, const std::string& loss_name, bool from_logits);

/** A mean over samples: each batch's value counts as many times as the batch has samples. */
class MeanTracker {
 public:
  void add(double batch_mean, int64_t batch_size) {
    sum_ += batch_mean * static_cast<double>(batch_size);
    count_ += batch_size;
  }
  double result() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : 0.0; }
  double sum() const { return sum_; }
  int64_t count() const { return count_; }

 private:
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace ug::train
