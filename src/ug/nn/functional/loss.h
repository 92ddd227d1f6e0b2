// Loss functions of torch.nn.functional. `reduction` is "mean" (the default), "sum" or
// "none" (the per-element losses), as in PyTorch; kl_div also takes "batchmean".
#pragma once

#include <string_view>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

struct CrossEntropyOptions {
  /** Per-class weights [C] (optional). */
  Tensor weight;
  /** Targets equal to this class index add nothing, not even to the mean's denominator. */
  int64_t ignore_index = -100;
  std::string_view reduction = "mean";
  /** Mixes each target with the uniform distribution: (1 - s) * target + s / C. */
  double label_smoothing = 0.0;
};

/** Cross entropy of logits `input` ([N, C], [C] or [N, C, d1, ...]) against class indices
 *  (int64 [N] / [] / [N, d1, ...]) or class probabilities (input's shape). With indices and
 *  weights, "mean" divides by the sum of the targets' weights, as torch does. */
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& options = {});

struct NllLossOptions {
  Tensor weight;
  int64_t ignore_index = -100;
  std::string_view reduction = "mean";
};

/** Negative log likelihood of log-probabilities `input` at class indices `target`. */
Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options = {});

/** With a weight (input's shape), "mean" is sum(weight * loss) / sum(weight), as in torch. */
Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                const Tensor& weight = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
               const Tensor& weight = {});
/** 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target). */
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                      double beta = 1.0);
/** 0.5 d^2 where |d| < delta, delta * (|d| - 0.5 delta) elsewhere; with a weight, "mean" is
 *  the plain mean of weight * loss (torch's rule for huber_loss). */
Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean", double delta = 1.0,
                  const Tensor& weight = {});

/** Binary cross entropy of probabilities in [0, 1]; each log is clamped to >= -100. */
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            std::string_view reduction = "mean");

struct BceWithLogitsOptions {
  Tensor weight;
  std::string_view reduction = "mean";
  /** Weight of the positive examples, broadcast along the last (class) dim. */
  Tensor pos_weight;
};

/** sigmoid + binary cross entropy in one stable expression (finite for any logit). */
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceWithLogitsOptions& options = {});

/** KL divergence with `input` in log space; `target` too when log_target. */
Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction = "mean", bool log_target = false);

/** Negative log-likelihood of `target` under Poisson(rate): rate = exp(input) when log_input
 *  (exp(input) - target * input), else input (input - target * log(input + eps)); full adds
 *  Stirling's approximation of log(target!) where target > 1. */
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false,
                        double eps = 1e-8, std::string_view reduction = "mean");

/** Negative log-likelihood of `target` under N(input, var): 0.5 (log var + (input - target)^2 /
 *  var), plus 0.5 log(2 pi) when full. var has input's shape, or lacks (or has 1 as) its last
 *  dim; it is clamped to at least eps in value only (its gradient is taken at the clamped
 *  value and passed through, as torch does). */
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full = false,
                         double eps = 1e-6, std::string_view reduction = "mean");

}  // namespace ug::nn::functional
