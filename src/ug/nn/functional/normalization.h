// Normalization layers of torch.nn.functional. layer_norm (an op), group_norm and
// instance_norm (which normalize rows of a reshaped input) run a fused kernel each way.
#pragma once

#include <optional>

#include "ug/core/tensor.h"
#include "ug/ops/nn.h"

namespace ug::nn::functional {

using ug::layer_norm;  // an op: ops/nn.h

/** x / sqrt(mean(x^2) + eps) * weight over the trailing dims; eps defaults to the machine
 *  epsilon of x's dtype, as in torch. */
Tensor rms_norm(const Tensor& input, const Dims& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = {});

/** Per-channel (dim 1) normalization of [N, C, ...]. In training the batch statistics are
 *  used and running_mean / running_var (when given) are updated in place: r = (1 - momentum)
 *  r + momentum * stat, with the unbiased variance. Otherwise the running statistics are used. */
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight = {},
                  const Tensor& bias = {}, bool training = false, double momentum = 0.1, double eps = 1e-5);

/** Normalizes each of num_groups groups of channels of [N, C, ...] per sample; weight and
 *  bias are per channel [C]. */
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);

/** Normalizes each channel of each sample of [N, C, ...] over its spatial dims; running
 *  statistics (when given) are updated as batch_norm does. With use_input_stats false the
 *  running statistics are used instead. */
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {}, const Tensor& running_var = {},
                     const Tensor& weight = {}, const Tensor& bias = {}, bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);

/** Each value divided by (k + alpha * the mean of the squares of `size` neighbouring channels,
 *  zero-padded)^beta (torch's formula: an average pooling of the squares over channels). */
Tensor local_response_norm(const Tensor& input, int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);

}  // namespace ug::nn::functional
