// Attention's pieces in the ops layer: the probabilities composed from ops (differentiable to
// any order) and the fused kernel's op, which keeps only the output and each row's
// log-sum-exp for backward (its rule is the op attention_backward; both are captured, so a
// compiled program calls the kernels back). nn::functional::scaled_dot_product_attention picks
// between them.
#pragma once

#include "ug/core/tensor.h"
#include "ug/graph/op_def.h"

namespace ug::ops {

/** The fused op's definition: its name and autocast policy (products: the low dtype, as
 *  torch's CPU autocast list has scaled_dot_product_attention). */
const graph::OpDef& attention_def();

/** softmax(q k^T * scale, masked) for q [..., L, E] and k [..., S, E]: [..., L, S], each row of
 *  which sums to 1, or is 0 where every key is masked. mask is undefined, bool (true =
 *  attend) or added to the scores; causal keeps key j <= i (and then mask is undefined). */
Tensor attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale);

/** Whether attention_fused runs for these operands now: non-empty q, k, v and a mask that
 *  takes no gradient, no vmap or forward mode (they take the composed form). */
bool attention_fuses(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask);

/** softmax(q k^T * scale, masked) v as one kernel for q [B, Hq, L, E], k [B, Hk, S, E] and
 *  v [B, Hk, S, Ev] (Hq a multiple of Hk: grouped query heads), mask [B, Hq, L, S] (a
 *  broadcast view) or undefined; non-empty. The output is [B, Hq, L, Ev] with its heads
 *  interleaved in memory ([B, L, Hq, Ev] storage), so merging them is a view. Its gradient
 *  recomputes the probabilities block by block, or, when a graph of the gradient is asked
 *  for, is written with ops (attention_probs). */
Tensor attention_fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                       double scale);

}  // namespace ug::ops
