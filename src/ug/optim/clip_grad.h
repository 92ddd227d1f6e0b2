// Gradient clipping, torch.nn.utils.clip_grad_norm_ / clip_grad_value_: called between
// backward() and the optimizer's step(), in place on the parameters' .grad.
#pragma once

#include <vector>

#include "ug/core/tensor.h"

namespace ug::nn::utils {

/** Scales all gradients together so that their joint norm (of order norm_type, which may be
 *  infinity) is at most max_norm; returns the norm before clipping (a scalar tensor).
 *  error_if_nonfinite: a NaN or infinite norm is an error instead of clipping to NaN. */
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
/** Clamps every gradient element into [-clip_value, clip_value]. */
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace ug::nn::utils
