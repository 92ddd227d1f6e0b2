#include "ug/train/metrics.h"

#include "ug/core/error.h"

namespace ug::train {

namespace {

// Counted in float64, so a batch's accuracy times its size gives back the exact count.
Tensor as_float(const Tensor& t) { return t.to(DType::Float64); }

/** Targets without the trailing size-1 dim of [N, 1] labels, compared as int64 class indices. */
Tensor sparse_accuracy(const Tensor& out, const Tensor& y) {
  Tensor labels = y.dim() == out.dim() && y.dim() > 0 && y.size(-1) == 1 ? y.squeeze({-1}) : y;
  return as_float(out.argmax(-1).eq(labels.to(DType::Int64))).mean();
}

Tensor categorical_accuracy(const Tensor& out, const Tensor& y) {
  return as_float(out.argmax(-1).eq(y.argmax(-1))).mean();
}

/** Keras's in_top_k (k = 5): a hit when fewer than k scores exceed the true class's score,
 *  so ties with the k-th score count as hits. labels hold class indices, one per row of out. */
Tensor top_k_hits(const Tensor& out, const Tensor& labels) {
  constexpr int64_t k = 5;
  Tensor scores = out.reshape({-1, out.size(-1)});
  Tensor truth = scores.gather(-1, labels.to(DType::Int64).reshape({-1, 1}));
  return as_float(scores.gt(truth).sum({-1}).lt(Scalar(k))).mean();
}

Tensor sparse_top_k_accuracy(const Tensor& out, const Tensor& y) { return top_k_hits(out, y); }

Tensor top_k_accuracy(const Tensor& out, const Tensor& y) { return top_k_hits(out, y.argmax(-1)); }

MetricFn binary_accuracy(double threshold) {
  return [threshold](const Tensor& out, const Tensor& y) {
    Tensor labels = y.shape() != out.shape() && y.numel() == out.numel() ? y.reshape(out.shape()) : y;
    return as_float(out.gt(Scalar(threshold)).eq(labels.gt(Scalar(0.5)))).mean();
  };
}

Tensor same_shape(const Tensor& out, const Tensor& y) {
  Tensor t = y.dtype() == out.dtype() ? y : y.to(out.dtype());
  return t.shape() != out.shape() && t.numel() == out.numel() ? t.reshape(out.shape()) : t;
}

/** Keras's choice of accuracy for a loss it does not know: binary for one output per sample,
 *  sparse when the targets have one dim less (or a trailing 1), categorical otherwise. */
MetricFn accuracy_from_shapes(MetricFn binary) {
  return [binary = std::move(binary)](const Tensor& out, const Tensor& y) {
    const bool one_output = out.dim() == 0 || out.size(-1) == 1;
    if (one_output) return binary(out, y);
    const bool sparse = y.dim() < out.dim() || (y.dim() > 0 && y.size(-1) == 1);
    return sparse ? sparse_accuracy(out, y) : categorical_accuracy(out, y);
  };
}

}  // namespace

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = {"accuracy",
                                                 "acc",
                                                 "sparse_categorical_accuracy",
                                                 "categorical_accuracy",
                                                 "binary_accuracy",
                                                 "mae",
                                                 "mean_absolute_error",
                                                 "mse",
                                                 "mean_squared_error",
                                                 "top_k_categorical_accuracy",
                                                 "sparse_top_k_categorical_accuracy"};
  return names;
}

MetricFn metric_by_name(const std::string& name, const std::string& loss_name, bool from_logits) {
  MetricFn binary = binary_accuracy(from_logits ? 0.0 : 0.5);
  if (name == "accuracy" || name == "acc") {
    if (loss_name == "sparse_categorical_crossentropy") return sparse_accuracy;
    if (loss_name == "categorical_crossentropy") return categorical_accuracy;
    if (loss_name == "binary_crossentropy") return binary;
    return accuracy_from_shapes(binary);
  }
  if (name == "sparse_categorical_accuracy") return sparse_accuracy;
  if (name == "categorical_accuracy") return categorical_accuracy;
  if (name == "binary_accuracy") return binary;
  if (name == "top_k_categorical_accuracy") return top_k_accuracy;
  if (name == "sparse_top_k_categorical_accuracy") return sparse_top_k_accuracy;
  if (name == "mae" || name == "mean_absolute_error")
    return [](const Tensor& out, const Tensor& y) { return out.sub(same_shape(out, y)).abs().mean(); };
  if (name == "mse" || name == "mean_squared_error")
    return [](const Tensor& out, const Tensor& y) { return out.sub(same_shape(out, y)).square().mean(); };
  std::string known;
  for (const std::string& n : metric_names()) known += (known.empty() ? "\"" : ", \"") + n + "\"";
  fail<ValueError>("[compile] unknown metric \"", name, "\"; the known metrics are ", known,
                   ", or pass a (name, function) pair");
}

}  // namespace ug::train
