// Dropout: zeroes elements with probability p and scales the rest by 1 / (1 - p) (inverted
// dropout), drawing from the global generator, so ug::manual_seed makes it reproducible.
#pragma once

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** The identity when p == 0 or training is false. */
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
/** Drops whole channels: one draw per (sample, channel) of [N, C, ...] (or [C, ...] without
 *  a batch dim). dropout1d expects 2-3 dims, dropout2d 3-4, dropout3d 4-5. */
Tensor dropout1d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
Tensor dropout3d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
/** Dropout that keeps SELU's zero mean and unit variance (dropped values go to -alpha'). */
Tensor alpha_dropout(const Tensor& input, double p = 0.5, bool training = false, bool inplace = false);

}  // namespace ug::nn::functional
