// The image classifiers of the model zoo (zoo.h), written as ordinary modules.
#pragma once

#include "ug/nn/containers.h"
#include "ug/nn/layers/transformer.h"
#include "ug/nn/layers/conv.h"
#include "ug/nn/layers/linear.h"
#include "ug/nn/layers/normalization.h"

namespace ug::models {

/** LeNet-5 as the articles and the benchmarks use it, for 28x28 images: conv 5x5 (pad 2) -> 6,
 *  relu, max-pool 2, conv 5x5 -> 16, relu, max-pool 2, then 400 -> 120 -> 84 -> classes. */
class LeNet : public nn::Module {
  UG_CLONEABLE(LeNet)
 public:
  LeNet(int64_t in_channels, int64_t classes);
  Tensor forward(const Tensor& x) override;

 protected:
  void rebind(const nn::CloneMemo& memo) override;

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  nn::Linear fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
};

/** A small pre-norm transformer encoder over the rows of an image: each of `tokens` rows of
 *  `features` pixels is embedded to d_model, a learned position is added, `layers` encoder
 *  layers (GELU, no dropout) follow, and the mean over tokens feeds a linear head. Takes
 *  (N, tokens, features), (N, 1, tokens, features) or (N, tokens * features). */
class TransformerClassifier : public nn::Module {
  UG_CLONEABLE(TransformerClassifier)
 public:
  struct Options {
    int64_t tokens, features, d_model, heads, ff, layers, classes;
  };
  explicit TransformerClassifier(Options options);
  Tensor forward(const Tensor& x) override;

 protected:
  void rebind(const nn::CloneMemo& memo) override;

 private:
  Options options_;
  nn::Linear embed_{nullptr}, head_{nullptr};
  nn::ModuleList encoder_{nullptr};
  nn::LayerNorm norm_{nullptr};
};

}  // namespace ug::models
