// Margin and embedding losses of torch.nn.functional, with torch's arguments and defaults;
// `reduction` is "mean" (the default), "sum" or "none" (the per-sample losses).
#pragma once

#include <functional>

#include <string_view>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** 1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1. */
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             std::string_view reduction = "mean");
/** max(0, -target (input1 - input2) + margin): target 1 ranks input1 first, -1 input2. */
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                           std::string_view reduction = "mean");
/** input where target is 1, max(0, margin - input) where it is -1. */
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            std::string_view reduction = "mean");
/** log(1 + exp(-target input)), elementwise. */
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");
/** Binary cross entropy of logits [N, C] / [C] against 0/1 targets, weighted per class and
 *  averaged over the classes: one loss per sample. */
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                   std::string_view reduction = "mean");
/** max(0, margin + d(anchor, positive) - d(anchor, negative)) with d the p-norm distance along
 *  the last dim (pairwise_distance, eps); swap: d(anchor, negative) is the smaller of it and
 *  d(positive, negative). */
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2.0, double eps = 1e-6, bool swap = false, std::string_view reduction = "mean");
/** Multi-class hinge loss of scores [N, C] / [C] at class indices target [N] / []: the mean
 *  over classes i != y of weight[y] max(0, margin - x[y] + x[i])^p, p 1 or 2. */
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p = 1, double margin = 1.0,
                         const Tensor& weight = {}, std::string_view reduction = "mean");

/** input [C] or [N, C]; target int64 of its shape: each row's target classes, ended by the
 *  first -1. Per row, the sum over target classes j and the other classes i of
 *  max(0, 1 - (x_j - x_i)), divided by C (torch.nn.MultiLabelMarginLoss). */
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");

/** max(0, margin + d(anchor, positive) - d(anchor, negative)) with any distance function
 *  (pairwise_distance when none); swap: d(anchor, negative) is the smaller of it and
 *  d(positive, negative). */
Tensor triplet_margin_with_distance_loss(
    const Tensor& anchor, const Tensor& positive, const Tensor& negative,
    const std::function<Tensor(const Tensor&, const Tensor&)>& distance_function = {}, double margin = 1.0,
    bool swap = false, std::string_view reduction = "mean");

}  // namespace ug::nn::functional
