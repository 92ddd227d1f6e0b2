// The fused primitives the layers of nn/ are built from: each runs one backend kernel
// forward and one backward (and records one node) on its hot path, and its composition of
// ops elsewhere (vmap, forward mode, other dtypes), where every op brings its own rules.
// nn::functional re-exports the public ones under torch.nn.functional's names.
#pragma once

#include <optional>

#include "ug/core/tensor.h"

namespace ug {

/** y = input @ weight^T + bias for input [..., in], weight [out, in] and bias [out] (optional):
 *  one matrix product over all leading dims, the bias added into its result. */
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});

/** weight[indices]: indices (int64 or int32, any shape) pick rows of weight [num, dim], giving
 *  indices.shape + [dim]. The row at padding_idx gets no gradient. With max_norm, the rows
 *  looked up are first renormalized in place to a norm_type-norm of at most max_norm (as
 *  torch does); scale_grad_by_freq divides each row's gradient by its count in indices. */
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = {},
                 std::optional<double> max_norm = {}, double norm_type = 2.0, bool scale_grad_by_freq = false);

/** Normalizes over the trailing dims `normalized_shape`: (x - mean) / sqrt(var + eps) * weight
 *  + bias, with the biased variance; weight and bias (optional) have normalized_shape. */
Tensor layer_norm(const Tensor& input, const Dims& normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);

namespace ops {

/** How a loss's per-element values are reduced (torch's `reduction`). */
enum class Reduction { None, Mean, Sum, BatchMean };

/** Whether nll_loss_fused applies: [N, C] or [C] float32/float64 input with targets of the
 *  matching shape, class weights that take no gradient, no vmap or forward mode. */
bool nll_loss_fuses(const Tensor& input, const Tensor& target, const Tensor& weight);
/** nll_loss (None, Mean or Sum) as one kernel each way; the input alone takes a gradient. */
Tensor nll_loss_fused(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                      Reduction reduction);

/** Whether cross_entropy_fused applies: [N, C] float32/float64 logits with targets [N] of an
 *  integer dtype, class weights that take no gradient, no vmap or forward mode. Unlike
 *  nll_loss_fused, also under capture: a program calls it back. */
bool cross_entropy_fuses(const Tensor& input, const Tensor& target, const Tensor& weight);
/** cross_entropy of logits [N, C] over class indices (None, Mean or Sum): log_softmax and
 *  nll_loss as one op, whose gradient is the op cross_entropy_backward (softmax minus the one-hot
 *  targets, scaled: one kernel). Where it does not fuse (under vmap, forward mode, or when a
 *  program runs under them), the same loss composed of ops. */
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction reduction);

/** mse_loss's Mean or Sum of (input - target)^2: for input and target of one shape and one
 *  float32/float64 dtype, one op whose kernel makes neither the difference nor its square and
 *  whose gradient makes one buffer; otherwise (broadcasting, 16-bit, vmap, forward mode) the
 *  same loss composed of ops. */
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction);

/** The op whose call normalize_rows records: layer_norm, group_norm or instance_norm. */
enum class RowNorm { Layer, Group, Instance };
/** x (any shape) normalized over rows of `cols` consecutive elements, times weight plus bias
 *  (`cols` elements each, any shape, optional). The result has x's shape. The composed form
 *  is not one call: its ops are recorded (and exported) one by one. */
Tensor normalize_rows(RowNorm kind, const Tensor& x, int64_t cols, const Tensor& weight, const Tensor& bias,
                      double eps);
/** batch_norm's batch-statistics form as one kernel each way: x [N, C, ...] normalized per
 *  channel over N and the trailing dims, times weight plus bias ([C] each, optional). */
struct BatchStats {
  Tensor y;
  Tensor mean, var;  // [C], the biased variance; outside autograd (the running statistics' update)
};
/** Whether batch_norm_fused applies: a float32/float64 input with at least one element per
 *  channel, weight and bias of its dtype, no vmap, forward mode or capture (a traced program
 *  runs batch_norm's composed parts, docs/design.md "Compiled mode"). */
bool batch_norm_fuses(const Tensor& x, const Tensor& weight, const Tensor& bias);
BatchStats batch_norm_fused(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
/** Checks that x ends in the dims `normalized_shape` and that weight and bias (when defined)
 *  have that shape; returns how many elements those dims hold. */
int64_t check_normalized(const Tensor& x, const Dims& normalized_shape, const Tensor& weight, const Tensor& bias,
                         const char* op);

}  // namespace ops
}  // namespace ug
