// scaled_dot_product_attention composed from two batched matrix products and a softmax:
// both products are single BLAS calls over the broadcast batch, and the ops' own rules give
// gradients of every order.
#include "ug/nn/functional/attention.h"

#include <cmath>
#include <limits>

#include "ug/nn/functional/dropout.h"
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
  if (mask.defined() && mask.dtype() != DType::Bool && mask.dtype() != q.dtype())
    fail<TypeError>("[", op, "] attn_mask must be bool or have the query's dtype ", q.dtype(), ", got ", mask.dtype());
}

/** k or v with each of its heads (dim -3) repeated for its group of query heads. */
Tensor expand_heads(const Tensor& t, int64_t q_heads, const char* what) {
  if (t.dim() < 3)
    fail("[scaled_dot_product_attention] enable_gqa needs ", what, " with a heads dim (-3), got shape ", t.shape());
  const int64_t heads = t.size(-3);
  if (heads == q_heads) return t;
  if (heads == 0 || q_heads % heads != 0)
    fail("[scaled_dot_product_attention] number of heads in ", what, " (", heads,
         ") must divide the number of query heads (", q_heads, ")");
  return repeat_interleave(t, q_heads / heads, t.dim() - 3);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k0, const Tensor& v0, const Tensor& mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  check_inputs(q, k0, v0, mask, is_causal);
  Tensor k = k0, v = v0;
  if (enable_gqa && q.dim() >= 3) {
    k = expand_heads(k0, q.size(-3), "key");
    v = expand_heads(v0, q.size(-3), "value");
  }
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  // Scaling q costs L*E multiplies rather than L*S on the scores.
  Tensor scores = matmul(q * s, k.transpose(-2, -1));
  Tensor keep;  // bool, true = attend
  if (is_causal) {
    const int64_t L = q.size(-2), S = k.size(-2);
    Options o{.dtype = DType::Int64, .device = q.device()};
    keep = arange(L, o).unsqueeze(1) >= arange(S, o).unsqueeze(0);
  } else if (mask.defined() && mask.dtype() == DType::Bool) {
    keep = mask;
  }
  if (keep.defined()) scores = where(keep, scores, -std::numeric_limits<double>::infinity());
  else if (mask.defined()) scores = scores + mask;
  Tensor attn;
  if (mask.defined()) {
    // A row with every key masked gives zeros (not NaN), and its gradient stays finite. (A
    // causal mask always keeps the first key.)
    Tensor dead = scores.eq(-std::numeric_limits<double>::infinity()).all(-1, true);
    attn = where(dead, 0.0, where(dead, 0.0, scores).softmax(-1));
  } else {
    attn = scores.softmax(-1);
  }
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true);
  return matmul(attn, v);
}

}  // namespace ug::nn::functional
