#include "ug/train/losses.h"

#include "ug/core/error.h"
#include "ug/nn/containers.h"
#include "ug/nn/functional/loss.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/layers/linear.h"

namespace ug::train {

namespace F = nn::functional;

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend epsilon: probabilities are kept this far from 0 and 1

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
  return s;
}

/** Class-index targets: int64, without the trailing size-1 dim Keras's labels often have. */
Tensor class_targets(const Tensor& output, const Tensor& target) {
  Tensor t = target.dim() == output.dim() && target.dim() > 0 && target.size(-1) == 1 ? target.squeeze({-1}) : target;
  return t.dtype() == DType::Int64 ? t : t.to(DType::Int64);
}

/** Targets shaped like the output ([N] against [N, 1] is reshaped, as Keras squeezes it) and of its dtype. */
Tensor like_output(const Tensor& output, const Tensor& target) {
  Tensor t = target.dtype() == output.dtype() ? target : target.to(output.dtype());
  if (t.shape() != output.shape() && t.numel() == output.numel()) t = t.reshape(output.shape());
  return t;
}

Tensor clipped(const Tensor& p) { return p.clamp(Scalar(kEpsilon), Scalar(1 - kEpsilon)); }

/** Keras's kl_divergence per sample: sum(t * log(t / p)) over the last dim, both clipped to [eps, 1]. */
Tensor kl_divergence(const Tensor& out, const Tensor& y) {
  Tensor t = like_output(out, y).clamp(Scalar(kEpsilon), Scalar(1));
  Tensor p = out.clamp(Scalar(kEpsilon), Scalar(1));
  return t.mul(t.div(p).log()).sum({-1});
}

}  // namespace

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names = {"sparse_categorical_crossentropy",
                                                 "categorical_crossentropy",
                                                 "binary_crossentropy",
                                                 "mse",
                                                 "mean_squared_error",
                                                 "mae",
                                                 "mean_absolute_error",
                                                 "huber",
                                                 "kl_divergence",
                                                 "kld"};
  return names;
}

std::string canonical_loss_name(const std::string& name) {
  if (name == "mean_squared_error") return "mse";
  if (name == "mean_absolute_error") return "mae";
  if (name == "kld") return "kl_divergence";
  for (const std::string& n : loss_names())
    if (n == name) return n;
  fail<ValueError>("[compile] unknown loss \"", name, "\"; the known losses are ", joined(loss_names()),
                   ", or pass a loss function or module");
}

LossFn loss_by_name(const std::string& name, bool from_logits) {
  const std::string loss = canonical_loss_name(name);
  if (loss == "sparse_categorical_crossentropy") {
    if (from_logits)
      return [](const Tensor& out, const Tensor& y) { return F::cross_entropy(out, class_targets(out, y)); };
    return [](const Tensor& out, const Tensor& y) { return F::nll_loss(clipped(out).log(), class_targets(out, y)); };
  }
  if (loss == "categorical_crossentropy") {
    if (from_logits)
      return [](const Tensor& out, const Tensor& y) { return F::cross_entropy(out, like_output(out, y)); };
    return [](const Tensor& out, const Tensor& y) {
      Tensor p = clipped(out.div(out.sum({-1}, true)));
      return like_output(out, y).mul(p.log()).sum({-1}).neg().mean();
    };
  }
  if (loss == "binary_crossentropy") {
    if (from_logits)
      return [](const Tensor& out, const Tensor& y) {
        return F::binary_cross_entropy_with_logits(out, like_output(out, y));
      };
    return
        [](const Tensor& out, const Tensor& y) { return F::binary_cross_entropy(clipped(out), like_output(out, y)); };
  }
  if (loss == "mse") return [](const Tensor& out, const Tensor& y) { return F::mse_loss(out, like_output(out, y)); };
  if (loss == "mae") return [](const Tensor& out, const Tensor& y) { return F::l1_loss(out, like_output(out, y)); };
  if (loss == "kl_divergence") return [](const Tensor& out, const Tensor& y) { return kl_divergence(out, y).mean(); };
  return [](const Tensor& out, const Tensor& y) { return F::huber_loss(out, like_output(out, y)); };
}

LossFn per_sample_loss_by_name(const std::string& name, bool from_logits, double huber_delta) {
  const std::string loss = canonical_loss_name(name);
  if (loss == "sparse_categorical_crossentropy") {
    if (from_logits)
      return [](const Tensor& out, const Tensor& y) {
        return F::cross_entropy(out, class_targets(out, y), {.reduction = "none"});
      };
    return [](const Tensor& out, const Tensor& y) {
      return F::nll_loss(clipped(out).log(), class_targets(out, y), {.reduction = "none"});
    };
  }
  if (loss == "categorical_crossentropy") {
    if (from_logits)
      return [](const Tensor& out, const Tensor& y) {
        return F::cross_entropy(out, like_output(out, y), {.reduction = "none"});
      };
    return [](const Tensor& out, const Tensor& y) {
      Tensor p = clipped(out.div(out.sum({-1}, true)));
      return like_output(out, y).mul(p.log()).sum({-1}).neg();
    };
  }
  if (loss == "kl_divergence") return kl_divergence;
  // The elementwise losses, averaged over the last dim as Keras's are.
  std::function<Tensor(const Tensor&, const Tensor&)> elementwise;
  if (loss == "binary_crossentropy" && from_logits)
    elementwise = [](const Tensor& out, const Tensor& y) {
      return F::binary_cross_entropy_with_logits(out, y, {.reduction = "none"});
    };
  else if (loss == "binary_crossentropy")
    elementwise = [](const Tensor& out, const Tensor& y) {
      return F::binary_cross_entropy(clipped(out), y, {}, "none");
    };
  else if (loss == "mse") elementwise = [](const Tensor& out, const Tensor& y) { return F::mse_loss(out, y, "none"); };
  else if (loss == "mae") elementwise = [](const Tensor& out, const Tensor& y) { return F::l1_loss(out, y, "none"); };
  else
    elementwise = [huber_delta](const Tensor& out, const Tensor& y) {
      return F::huber_loss(out, y, "none", huber_delta);
    };
  return [elementwise](const Tensor& out, const Tensor& y) {
    Tensor l = elementwise(out, like_output(out, y));
    return l.dim() > 1 ? l.mean({-1}) : l;
  };
}

std::string output_activation(nn::Module& module) {
  nn::Module* m = &module;
  while (auto* seq = dynamic_cast<nn::SequentialImpl*>(m)) {
    if (seq->size() == 0) return "";
    m = (*seq)[static_cast<int64_t>(seq->size()) - 1].get();
  }
  if (dynamic_cast<nn::SoftmaxImpl*>(m)) return "softmax";
  if (dynamic_cast<nn::SigmoidImpl*>(m)) return "sigmoid";
  if (auto* dense = dynamic_cast<nn::DenseImpl*>(m))
    if (dense->activation_name() == "softmax" || dense->activation_name() == "sigmoid") return dense->activation_name();
  return "";
}

bool loss_takes_logits(const std::string& loss_name, nn::Module& module) {
  const std::string loss = canonical_loss_name(loss_name);
  const std::string act = output_activation(module);
  if (loss == "binary_crossentropy") return act != "sigmoid";
  if (loss == "sparse_categorical_crossentropy" || loss == "categorical_crossentropy") return act != "softmax";
  if (loss == "kl_divergence") return false;  // Keras's KL divergence reads probabilities only
  return true;                                // regression losses do not read probabilities
}

}  // namespace ug::train
