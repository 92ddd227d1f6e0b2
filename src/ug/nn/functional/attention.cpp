// scaled_dot_product_attention: the fused kernel (ops/attention.h: the probabilities are
// recomputed in backward, never stored) where it applies, captures included, else composed
// from two batched matrix products and a softmax (dropout, vmap, forward mode, a mask that
// takes a gradient), whose ops' own rules give gradients of every order.
#include "ug/nn/functional/attention.h"

#include <algorithm>
#include <cmath>

#include "ug/nn/functional/dropout.h"
#include "ug/ops/attention.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/linalg.h"
#include "ug/ops/reduce.h"

namespace ug::nn::functional {

namespace {

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool is_causal) {
  const char* op = "scaled_dot_product_attention";
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    fail("[", op, "] query, key and value need at least 2 dims [..., L, E], got shapes ", q.shape(), ", ", k.shape(),
         " and ", v.shape());
  if (!is_floating(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype())
    fail<TypeError>("[", op, "] expected query, key and value of one floating dtype, got ", q.dtype(), ", ", k.dtype(),
                    " and ", v.dtype());
  if (q.size(-1) != k.size(-1))
    fail("[", op, "] query and key must have the same embedding size, got shapes ", q.shape(), " and ", k.shape());
  if (k.size(-2) != v.size(-2))
    fail("[", op, "] key and value must have the same sequence length, got shapes ", k.shape(), " and ", v.shape());
  if (is_causal && mask.defined())
    fail<RuntimeError>("[", op, "] explicit attn_mask should not be set when is_causal=True");
  const int64_t L = q.size(-2), S = k.size(-2);
  if (mask.defined() && ((mask.dim() >= 1 && mask.size(-1) != 1 && mask.size(-1) != S) ||
                         (mask.dim() >= 2 && mask.size(-2) != 1 && mask.size(-2) != L)))
    fail("[", op, "] attn_mask of shape ", mask.shape(), " does not broadcast to the scores' [..., ", L, ", ", S,
         "] (query ", q.shape(), ", key ", k.shape(), ")");
  if (mask.defined() && mask.dtype() != DType::Bool && mask.dtype() != q.dtype())
    fail<TypeError>("[", op, "] attn_mask must be bool or have the query's dtype ", q.dtype(), ", got ", mask.dtype());
}

/** The number of heads (dim -3) of k or v, checked to divide q's. */
int64_t check_heads(const Tensor& t, int64_t q_heads, const char* what) {
  if (t.dim() < 3)
    fail("[scaled_dot_product_attention] enable_gqa needs ", what, " with a heads dim (-3), got shape ", t.shape());
  const int64_t heads = t.size(-3);
  if (heads == 0 || q_heads % heads != 0)
    fail("[scaled_dot_product_attention] number of heads in ", what, " (", heads,
         ") must divide the number of query heads (", q_heads, ")");
  return heads;
}

/** k or v with each of its heads repeated for its group of query heads. */
Tensor expand_heads(const Tensor& t, int64_t q_heads) {
  const int64_t heads = t.size(-3);
  return heads == q_heads ? t : repeat_interleave(t, q_heads / heads, t.dim() - 3);
}

/** t with this shape: itself when it has it (no node), else a view or copy. */
Tensor as_shape(const Tensor& t, const Dims& shape) { return t.shape() == Shape(shape) ? t : t.reshape(shape); }

/** t's dims before the last two (its batch dims, heads included). */
Shape lead(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - std::min<int64_t>(t.dim(), 2)); }

/** The fused kernel on [B, H, L, E] views of the operands broadcast over their batch dims;
 *  grouped: k and v keep their own heads, a divisor of q's. */
Tensor fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool is_causal, double scale,
             bool grouped) {
  const char* op = "scaled_dot_product_attention";
  Shape kl = lead(k), vl = lead(v);
  if (grouped) kl.back() = vl.back() = q.size(-3);  // the heads broadcast as q's
  Shape batch = broadcast_shapes(broadcast_shapes(lead(q), kl, op), vl, op);
  if (mask.defined()) batch = broadcast_shapes(batch, lead(mask), op);
  const Dims bd(batch.begin(), batch.end());
  const int64_t H = bd.empty() ? 1 : bd.back(), Hk = grouped ? k.size(-3) : H;
  int64_t B = 1;
  for (size_t i = 0; i + 1 < bd.size(); ++i) B *= bd[i];
  auto flat = [&](const Tensor& t, int64_t heads, int64_t rows, int64_t cols) {
    Dims shape = bd;
    if (!shape.empty()) shape.back() = heads;
    shape.push_back(rows);
    shape.push_back(cols);
    Tensor e = t.shape() == Shape(shape) ? t : t.expand(shape);
    return as_shape(e, {B, heads, rows, cols});
  };
  const int64_t L = q.size(-2), S = k.size(-2);
  Tensor out = ops::attention_fused(flat(q, H, L, q.size(-1)), flat(k, Hk, S, k.size(-1)), flat(v, Hk, S, v.size(-1)),
                                    mask.defined() ? flat(mask, H, L, S) : Tensor(), is_causal, scale);
  Dims shape = bd;
  shape.push_back(L);
  shape.push_back(v.size(-1));
  return as_shape(out, shape);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k0, const Tensor& v0, const Tensor& mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  if (autocast::applies(ops::attention_def())) [[unlikely]]
    return autocast::call(ops::attention_def(), scaled_dot_product_attention, q, k0, v0, mask, dropout_p, is_causal,
                          scale, enable_gqa);
  check_inputs(q, k0, v0, mask, is_causal);
  const bool grouped = enable_gqa && q.dim() >= 3;
  if (grouped) {
    check_heads(k0, q.size(-3), "key");
    check_heads(v0, q.size(-3), "value");
  }
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  // Dropout (on the probabilities) and the transforms the kernel has no rule for take the
  // composed form; so do grouped keys and values with different head counts.
  if (dropout_p == 0 && ops::attention_fuses(q, k0, v0, mask) && (!grouped || k0.size(-3) == v0.size(-3)))
    return fused(q, k0, v0, mask, is_causal, s, grouped);
  Tensor k = grouped ? expand_heads(k0, q.size(-3)) : k0, v = grouped ? expand_heads(v0, q.size(-3)) : v0;
  Tensor attn = ops::attention_probs(q, k, mask, is_causal, s);
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true);
  return matmul(attn, v);
}

}  // namespace ug::nn::functional
