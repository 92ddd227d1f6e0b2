#include "ug/nn/layers/alpha_dropout.h"

#include "ug/nn/functional/dropout.h"
#include "ug/nn/functional/feature_alpha_dropout.h"

namespace ug::nn {

AlphaDropoutImpl::AlphaDropoutImpl(double p, bool inplace)
    : DropoutImpl(
          "AlphaDropout",
          [](const Tensor& x, double p, bool training, bool) { return functional::alpha_dropout(x, p, training); }, p,
          inplace) {}

FeatureAlphaDropoutImpl::FeatureAlphaDropoutImpl(double p, bool inplace)
    : DropoutImpl(
          "FeatureAlphaDropout",
          [](const Tensor& x, double p, bool training, bool) {
            return functional::feature_alpha_dropout(x, p, training);
          },
          p, inplace) {}

}  // namespace ug::nn
