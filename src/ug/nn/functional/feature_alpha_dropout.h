// feature_alpha_dropout (functional/dropout.cpp, beside alpha_dropout): a header of its own so
// that adding it did not rebuild everything that includes dropout.h.
#pragma once

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** Alpha dropout of whole channels: one draw per (sample, channel) of [N, C, ...]. */
Tensor feature_alpha_dropout(const Tensor& input, double p = 0.5, bool training = false, bool inplace = false);

}  // namespace ug::nn::functional
