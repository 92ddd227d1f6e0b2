// AlphaDropout and FeatureAlphaDropout (torch.nn's): dropout that keeps SELU's zero mean and
// unit variance, per element or per channel. Like torch's, their forward never works in place
// (inplace is kept for the printout). In a header of their own so that adding them did not
// rebuild everything that includes dropout.h.
#pragma once

#include "ug/nn/layers/dropout.h"

namespace ug::nn {

class AlphaDropoutImpl : public DropoutImpl {
  UG_CLONEABLE(AlphaDropoutImpl)
 public:
  explicit AlphaDropoutImpl(double p = 0.5, bool inplace = false);
};
UG_MODULE(AlphaDropout);

/** One draw per (sample, channel) of [N, C, ...]. */
class FeatureAlphaDropoutImpl : public DropoutImpl {
  UG_CLONEABLE(FeatureAlphaDropoutImpl)
 public:
  explicit FeatureAlphaDropoutImpl(double p = 0.5, bool inplace = false);
};
UG_MODULE(FeatureAlphaDropout);

}  // namespace ug::nn
