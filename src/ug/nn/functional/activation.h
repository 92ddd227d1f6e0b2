// Activation functions of torch.nn.functional, with PyTorch's defaults. Functions that take
// `inplace` write the result into x (and return x), as torch's do.
#pragma once

#include <optional>
#include <string_view>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

Tensor relu(const Tensor& x, bool inplace = false);
/** min(max(x, 0), 6). */
Tensor relu6(const Tensor& x, bool inplace = false);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01, bool inplace = false);
/** x for x > 0, alpha * (exp(x) - 1) otherwise. */
Tensor elu(const Tensor& x, double alpha = 1.0, bool inplace = false);
Tensor selu(const Tensor& x, bool inplace = false);
Tensor celu(const Tensor& x, double alpha = 1.0, bool inplace = false);
/** approximate: "none" (exact, with erf) or "tanh". */
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor silu(const Tensor& x, bool inplace = false);
/** x * tanh(softplus(x)). */
Tensor mish(const Tensor& x, bool inplace = false);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
/** log(sigmoid(x)), computed without overflow for any x. */
Tensor logsigmoid(const Tensor& x);
/** log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold. */
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor softsign(const Tensor& x);
/** x clamped to [min_val, max_val]; the gradient is zero outside the open interval. */
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0, bool inplace = false);
Tensor hardsigmoid(const Tensor& x, bool inplace = false);
Tensor hardswish(const Tensor& x, bool inplace = false);
/** x where x > threshold, value elsewhere. */
Tensor threshold(const Tensor& x, double threshold, double value, bool inplace = false);
/** x where |x| > lambd, 0 elsewhere. */
Tensor hardshrink(const Tensor& x, double lambd = 0.5);
/** x moved lambd (>= 0) towards 0, and 0 within [-lambd, lambd]. */
Tensor softshrink(const Tensor& x, double lambd = 0.5);
/** x - tanh(x). */
Tensor tanhshrink(const Tensor& x);
/** x where x > 0, weight * x elsewhere; weight holds one slope, or one per channel (dim 1). */
Tensor prelu(const Tensor& x, const Tensor& weight);
/** The first half of x along dim times the sigmoid of the second half. */
Tensor glu(const Tensor& x, int64_t dim = -1);

/** The dim torch's softmax, log_softmax and softmin take when given none (a deprecated
 *  default there): 0 for 0-, 1- and 3-d inputs, 1 otherwise. */
int64_t implicit_softmax_dim(const Tensor& x);
/** softmax along dim, computed in `dtype` when given (x is cast first). */
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
Tensor softmin(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});

/** x / max(||x||_p, eps) along dim. */
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);
/** sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim (inputs broadcast). */
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
/** ||x1 - x2 + eps||_p along the last dim. */
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);

/** The p-norm distances of every pair of rows i < j of input [N, M], in that order:
 *  [N (N - 1) / 2] (torch.pdist). */
Tensor pdist(const Tensor& input, double p = 2.0);

/** Leaky ReLU with random slopes (torch's RReLU): in training each negative value is scaled by
 *  its own slope drawn from U(lower, upper), otherwise by their mean. */
Tensor rrelu(const Tensor& input, double lower = 1.0 / 8, double upper = 1.0 / 3, bool training = false,
             bool inplace = false);

/** Samples from the Gumbel-softmax (concrete) distribution over `dim`: softmax((logits + g) /
 *  tau), g standard Gumbel noise; hard: the one-hot argmax of that sample, with the soft
 *  sample's gradient (straight through). */
Tensor gumbel_softmax(const Tensor& logits, double tau = 1.0, bool hard = false, int64_t dim = -1);

}  // namespace ug::nn::functional
