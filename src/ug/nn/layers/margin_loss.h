// Margin and embedding loss modules (torch.nn's), each holding its options and calling its
// function in functional/margin_loss.h. Class weights are buffers, as in torch.
#pragma once

#include <functional>

#include "ug/nn/functional/margin_loss.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/layers/loss.h"

namespace ug::nn {

/** forward(input1, input2, target). */
class CosineEmbeddingLossImpl : public LossImpl {
  UG_CLONEABLE(CosineEmbeddingLossImpl)
 public:
  explicit CosineEmbeddingLossImpl(double margin = 0.0, std::string reduction = "mean")
      : LossImpl("CosineEmbeddingLoss", std::move(reduction)), margin_(margin) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
    return functional::cosine_embedding_loss(input1, input2, target, margin_, reduction());
  }

 private:
  double margin_;
};
UG_MODULE(CosineEmbeddingLoss);

/** forward(input1, input2, target). */
class MarginRankingLossImpl : public LossImpl {
  UG_CLONEABLE(MarginRankingLossImpl)
 public:
  explicit MarginRankingLossImpl(double margin = 0.0, std::string reduction = "mean")
      : LossImpl("MarginRankingLoss", std::move(reduction)), margin_(margin) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
    return functional::margin_ranking_loss(input1, input2, target, margin_, reduction());
  }

 private:
  double margin_;
};
UG_MODULE(MarginRankingLoss);

class HingeEmbeddingLossImpl : public LossImpl {
  UG_CLONEABLE(HingeEmbeddingLossImpl)
 public:
  explicit HingeEmbeddingLossImpl(double margin = 1.0, std::string reduction = "mean")
      : LossImpl("HingeEmbeddingLoss", std::move(reduction)), margin_(margin) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::hinge_embedding_loss(input, target, margin_, reduction());
  }

 private:
  double margin_;
};
UG_MODULE(HingeEmbeddingLoss);

class SoftMarginLossImpl : public LossImpl {
  UG_CLONEABLE(SoftMarginLossImpl)
 public:
  explicit SoftMarginLossImpl(std::string reduction = "mean") : LossImpl("SoftMarginLoss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::soft_margin_loss(input, target, reduction());
  }
};
UG_MODULE(SoftMarginLoss);

class MultiLabelSoftMarginLossImpl : public LossImpl {
  UG_CLONEABLE(MultiLabelSoftMarginLossImpl)
 public:
  explicit MultiLabelSoftMarginLossImpl(Tensor weight = {}, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target);
};
UG_MODULE(MultiLabelSoftMarginLoss);

/** forward(anchor, positive, negative); margin must be positive. */
class TripletMarginLossImpl : public LossImpl {
  UG_CLONEABLE(TripletMarginLossImpl)
 public:
  explicit TripletMarginLossImpl(double margin = 1.0, double p = 2.0, double eps = 1e-6, bool swap = false,
                                 std::string reduction = "mean");
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
    return functional::triplet_margin_loss(anchor, positive, negative, margin_, p_, eps_, swap_, reduction());
  }

 private:
  double margin_, p_, eps_;
  bool swap_;
};
UG_MODULE(TripletMarginLoss);

/** p is 1 or 2; weight, when given, has one entry per class. */
class MultiMarginLossImpl : public LossImpl {
  UG_CLONEABLE(MultiMarginLossImpl)
 public:
  explicit MultiMarginLossImpl(int64_t p = 1, double margin = 1.0, Tensor weight = {}, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target);

 private:
  int64_t p_;
  double margin_;
};
UG_MODULE(MultiMarginLoss);

class MultiLabelMarginLossImpl : public LossImpl {
  UG_CLONEABLE(MultiLabelMarginLossImpl)
 public:
  explicit MultiLabelMarginLossImpl(std::string reduction = "mean")
      : LossImpl("MultiLabelMarginLoss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::multilabel_margin_loss(input, target, reduction());
  }
};
UG_MODULE(MultiLabelMarginLoss);

/** The distance function is any callable; none means a PairwiseDistance child, as torch's
 *  (which its printout shows). */
class TripletMarginWithDistanceLossImpl : public LossImpl {
  UG_CLONEABLE(TripletMarginWithDistanceLossImpl)
 public:
  using Distance = std::function<Tensor(const Tensor&, const Tensor&)>;
  explicit TripletMarginWithDistanceLossImpl(Distance distance_function = {}, double margin = 1.0, bool swap = false,
                                             std::string reduction = "mean")
      : LossImpl("TripletMarginWithDistanceLoss", std::move(reduction)),
        distance_(std::move(distance_function)),
        margin_(margin),
        swap_(swap) {
    if (!(margin > 0))
      fail("[TripletMarginWithDistanceLoss] expected margin to be greater than 0, got ", margin, " instead");
    if (!distance_) default_distance_ = register_module("distance_function", PairwiseDistance());
  }
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
    const PairwiseDistance& d = default_distance_;
    return functional::triplet_margin_with_distance_loss(
        anchor, positive, negative,
        distance_ ? distance_ : [&d](const Tensor& a, const Tensor& b) { return d->forward(a, b); }, margin_, swap_,
        reduction());
  }
  void rebind(const CloneMemo& memo) override { memo.remap(default_distance_); }

 private:
  Distance distance_;
  PairwiseDistance default_distance_{nullptr};
  double margin_;
  bool swap_;
};
UG_MODULE(TripletMarginWithDistanceLoss);

}  // namespace ug::nn
