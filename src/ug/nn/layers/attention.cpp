#include "ug/nn/layers/attention.h"

#include <cmath>
#include <limits>

#include "ug/nn/functional/attention.h"
#include "ug/nn/functional/dropout.h"
#include "ug/nn/functional/linear.h"
#include "ug/nn/init.h"
#include "ug/nn/layers/activation.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"

namespace ug::nn {

namespace F = functional;

namespace {

/** A MultiheadAttention mask as a float mask to add to the scores (bool: True = masked). */
Tensor additive(const Tensor& mask, DType dtype) {
  if (mask.dtype() == DType::Bool)
    return where(mask, -std::numeric_limits<double>::infinity(), zeros({}, {.dtype = dtype}));
  if (!is_floating(mask.dtype()))
    fail<TypeError>("[MultiheadAttention] masks must be bool or floating, got ", mask.dtype());
  return mask.to(dtype);
}

}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                               bool batch_first, bool add_bias_kv, bool add_zero_attn, int64_t kdim,
                                               int64_t vdim)
    : Module("MultiheadAttention"),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      kdim_(kdim ? kdim : embed_dim),
      vdim_(vdim ? vdim : embed_dim),
      dropout_(dropout),
      batch_first_(batch_first),
      add_zero_attn_(add_zero_attn) {
  if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads != 0)
    fail("[MultiheadAttention] embed_dim (", embed_dim, ") must be a positive multiple of num_heads (", num_heads, ")");
  if (kdim_ <= 0 || vdim_ <= 0) fail("[MultiheadAttention] kdim and vdim must be positive, got ", kdim, " and ", vdim);
  // torch's parameters, in its order
  if (kdim_ == embed_dim && vdim_ == embed_dim) {
    register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}));
  } else {
    register_parameter("q_proj_weight", empty({embed_dim, embed_dim}));
    register_parameter("k_proj_weight", empty({embed_dim, kdim_}));
    register_parameter("v_proj_weight", empty({embed_dim, vdim_}));
  }
  register_parameter("in_proj_bias", bias ? empty({3 * embed_dim}) : Tensor());
  if (add_bias_kv) {
    register_parameter("bias_k", empty({1, 1, embed_dim}));
    register_parameter("bias_v", empty({1, 1, embed_dim}));
  }
  out_proj = register_module("out_proj", Linear(embed_dim, embed_dim, bias));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  // PyTorch: Xavier-uniform input projections, zero biases, Xavier-normal bias_k and bias_v;
  // out_proj keeps Linear's weight.
  for (const char* name : {"in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"})
    if (has_parameter(name)) init::xavier_uniform_(parameter(name));
  if (Tensor& b = parameter("in_proj_bias"); b.defined()) {
    init::zeros_(b);
    init::zeros_(out_proj->bias());
  }
  for (const char* name : {"bias_k", "bias_v"})
    if (has_parameter(name)) init::xavier_normal_(parameter(name));
}

std::pair<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                          const Tensor& key_padding_mask, bool need_weights,
                                                          const Tensor& attn_mask, bool average_attn_weights,
                                                          bool is_causal) {
  const bool batched = query.dim() == 3;
  if (!(batched || query.dim() == 2) || key.dim() != query.dim() || value.dim() != query.dim())
    fail("[MultiheadAttention] expected query, key and value of 2 (unbatched) or 3 dims, got shapes ", query.shape(),
         ", ", key.shape(), " and ", value.shape());
  auto to_batch_first = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return batch_first_ ? t : t.transpose(0, 1);
  };
  Tensor q = to_batch_first(query), k = to_batch_first(key), v = to_batch_first(value);
  const int64_t E = embed_dim_, H = num_heads_, hd = E / H;
  if (q.size(2) != E || k.size(2) != kdim_ || v.size(2) != vdim_)
    fail("[MultiheadAttention] expected embedding sizes ", E, ", ", kdim_, " and ", vdim_,
         " in query, key and value, got shapes ", query.shape(), ", ", key.shape(), " and ", value.shape());
  if (k.size(1) != v.size(1) || k.size(0) != q.size(0) || v.size(0) != q.size(0))
    fail("[MultiheadAttention] key and value must have the same length and batch as query, got shapes ", query.shape(),
         ", ", key.shape(), " and ", value.shape());
  const int64_t N = q.size(0), L = q.size(1), S = k.size(1);

  const bool packed = has_parameter("in_proj_weight");
  const Tensor& b = parameter("in_proj_bias");
  auto part = [&](const Tensor& t, int64_t i) { return t.defined() ? t.narrow(0, i * E, E) : Tensor(); };
  if (!packed) {
    q = F::linear(q, parameter("q_proj_weight"), part(b, 0));
    k = F::linear(k, parameter("k_proj_weight"), part(b, 1));
    v = F::linear(v, parameter("v_proj_weight"), part(b, 2));
  } else if (query.impl_ref() == key.impl_ref() && key.impl_ref() == value.impl_ref()) {
    // Self-attention: one [N*L, E] x [E, 3E] product for q, k and v together.
    auto qkv = F::linear(q, parameter("in_proj_weight"), b).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    const Tensor& w = parameter("in_proj_weight");
    q = F::linear(q, part(w, 0), part(b, 0));
    k = F::linear(k, part(w, 1), part(b, 1));
    v = F::linear(v, part(w, 2), part(b, 2));
  }
  int64_t extra = 0;  // the positions appended to the keys, which the masks leave open
  if (has_parameter("bias_k")) {
    k = cat({k, parameter("bias_k").expand({N, 1, E})}, 1);
    v = cat({v, parameter("bias_v").expand({N, 1, E})}, 1);
    ++extra;
  }
  auto heads = [&](const Tensor& t, int64_t len) { return t.reshape({N, len, H, hd}).transpose(1, 2); };
  q = heads(q, L), k = heads(k, S + extra), v = heads(v, S + extra);
  if (add_zero_attn_) {
    const Tensor zero = zeros({N, H, 1, hd}, {.dtype = k.dtype(), .device = k.device()});
    k = cat({k, zero}, 2);
    v = cat({v, zero}, 2);
    ++extra;
  }

  Tensor mask;
  if (attn_mask.defined()) {
    if (attn_mask.dim() == 2 && attn_mask.size(0) == L && attn_mask.size(1) == S) mask = additive(attn_mask, q.dtype());
    else if (attn_mask.dim() == 3 && attn_mask.size(0) == N * H && attn_mask.size(1) == L && attn_mask.size(2) == S)
      mask = additive(attn_mask, q.dtype()).view({N, H, L, S});
    else
      fail("[MultiheadAttention] attn_mask must have shape [", L, ", ", S, "] or [", N * H, ", ", L, ", ", S, "], got ",
           attn_mask.shape());
  } else if (is_causal) {
    // Query i may not attend to keys after i.
    Tensor future =
        arange(0, S, 1, {.dtype = DType::Int64}).unsqueeze(0) > arange(0, L, 1, {.dtype = DType::Int64}).unsqueeze(1);
    mask = additive(future, q.dtype());
  }
  if (key_padding_mask.defined()) {
    Tensor kpm = batched ? key_padding_mask : key_padding_mask.unsqueeze(0);
    if (!(kpm.dim() == 2 && kpm.size(0) == N && kpm.size(1) == S))
      fail("[MultiheadAttention] key_padding_mask must have shape [", N, ", ", S, "], got ", key_padding_mask.shape());
    Tensor pad = additive(kpm, q.dtype()).view({N, 1, 1, S});
    mask = mask.defined() ? mask + pad : pad;
  }
  if (mask.defined() && extra) mask = pad(mask, {0, extra});

  const double p = is_training() ? dropout_ : 0.0;
  Tensor out, weights;
  if (need_weights) {
    Tensor scores = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    if (mask.defined()) scores = scores + mask;
    weights = F::dropout(scores.softmax(-1), p, p > 0);
    out = weights.matmul(v);
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.squeeze(Dims{0});
  } else {
    out = F::scaled_dot_product_attention(q, k, v, mask, p);
  }
  out = out_proj(out.transpose(1, 2).reshape({N, L, E}));
  if (!batched) out = out.squeeze(Dims{0});
  else if (!batch_first_) out = out.transpose(0, 1);
  return {out, weights};
}

std::string MultiheadAttentionImpl::extra_repr() const { return ""; }

}  // namespace ug::nn
