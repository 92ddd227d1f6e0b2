// Gradient clipping, torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (and clip_grad_norm_'s
// two halves, get_total_norm and clip_grads_with_norm_): called between backward() and the
// optimizer's step(), in place on the parameters' .grad. Also parameters_to_vector and
// vector_to_parameters.
#pragma once

#include <vector>

#include "ug/core/tensor.h"

namespace ug::nn::utils {

/** Scales all gradients together so that their joint norm (of order norm_type, which may be
 *  infinity) is at most max_norm; returns the norm before clipping (a scalar tensor).
 *  error_if_nonfinite: a NaN or infinite norm is an error instead of clipping to NaN. */
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
/** The norm (of order norm_type) of the tensors' norms, as one vector's; 0 for none.
 *  error_if_nonfinite: a NaN or infinite norm is an error. */
Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type = 2.0, bool error_if_nonfinite = false);
/** Scales the parameters' gradients by min(1, max_norm / (total_norm + 1e-6)). */
void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm, const Tensor& total_norm);
/** Clamps every gradient element into [-clip_value, clip_value]. */
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
/** The parameters flattened and concatenated into one vector (differentiable). */
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
/** Copies consecutive slices of vec into the parameters, in order. */
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace ug::nn::utils
