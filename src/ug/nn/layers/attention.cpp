#include "ug/nn/layers/attention.h"

#include <cmath>
#include <limits>

#include "ug/nn/functional/attention.h"
#include "ug/nn/functional/dropout.h"
#include "ug/nn/functional/linear.h"
#include "ug/nn/init.h"
#include "ug/nn/layers/activation.h"
#include "ug/ops/binary.h"

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
                                               bool batch_first)
    : Module("MultiheadAttention"),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      dropout_(dropout),
      batch_first_(batch_first) {
  if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads != 0)
    fail("[MultiheadAttention] embed_dim (", embed_dim, ") must be a positive multiple of num_heads (", num_heads, ")");
  register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}));
  register_parameter("in_proj_bias", bias ? empty({3 * embed_dim}) : Tensor());
  out_proj = register_module("out_proj", Linear(embed_dim, embed_dim, bias));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  // PyTorch: Xavier-uniform input projection, zero biases; out_proj keeps Linear's weight.
  init::xavier_uniform_(parameter("in_proj_weight"));
  if (Tensor& b = parameter("in_proj_bias"); b.defined()) {
    init::zeros_(b);
    init::zeros_(out_proj->bias());
  }
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
  if (q.size(2) != E || k.size(2) != E || v.size(2) != E)
    fail("[MultiheadAttention] expected embedding size ", E, " in query, key and value, got shapes ", query.shape(),
         ", ", key.shape(), " and ", value.shape());
  if (k.size(1) != v.size(1) || k.size(0) != q.size(0) || v.size(0) != q.size(0))
    fail("[MultiheadAttention] key and value must have the same length and batch as query, got shapes ", query.shape(),
         ", ", key.shape(), " and ", value.shape());
  const int64_t N = q.size(0), L = q.size(1), S = k.size(1);

  const Tensor& w = parameter("in_proj_weight");
  const Tensor& b = parameter("in_proj_bias");
  auto part = [&](const Tensor& t, int64_t i) { return t.defined() ? t.narrow(0, i * E, E) : Tensor(); };
  if (query.impl_ref() == key.impl_ref() && key.impl_ref() == value.impl_ref()) {
    // Self-attention: one [N*L, E] x [E, 3E] product for q, k and v together.
    auto qkv = F::linear(q, w, b).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    q = F::linear(q, part(w, 0), part(b, 0));
    k = F::linear(k, part(w, 1), part(b, 1));
    v = F::linear(v, part(w, 2), part(b, 2));
  }
  auto heads = [&](const Tensor& t, int64_t len) { return t.reshape({N, len, H, hd}).transpose(1, 2); };
  q = heads(q, L), k = heads(k, S), v = heads(v, S);

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

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                         double dropout_p, const std::string& activation_name,
                                                         double layer_norm_eps, bool batch_first, bool norm_first,
                                                         bool bias)
    : Module("TransformerEncoderLayer"),
      hyper_{d_model,        nhead,       dim_feedforward, dropout_p, activation_name,
             layer_norm_eps, batch_first, norm_first,      bias},
      activation_(activation(activation_name)) {
  if (activation_name != "relu" && activation_name != "gelu")
    fail("[TransformerEncoderLayer] activation must be \"relu\" or \"gelu\", got \"", activation_name, "\"");
  self_attn = register_module("self_attn", MultiheadAttention(d_model, nhead, dropout_p, bias, batch_first));
  linear1 = register_module("linear1", Linear(d_model, dim_feedforward, bias));
  dropout = register_module("dropout", Dropout(dropout_p));
  linear2 = register_module("linear2", Linear(dim_feedforward, d_model, bias));
  norm1 = register_module("norm1", LayerNorm(Dims{d_model}, layer_norm_eps, true, bias));
  norm2 = register_module("norm2", LayerNorm(Dims{d_model}, layer_norm_eps, true, bias));
  dropout1 = register_module("dropout1", Dropout(dropout_p));
  dropout2 = register_module("dropout2", Dropout(dropout_p));
}

Tensor TransformerEncoderLayerImpl::self_attention_block(const Tensor& x, const Tensor& mask,
                                                         const Tensor& key_padding_mask, bool is_causal) {
  // Through call(), so that hooks on self_attn run as they do in torch (they see (x, x, x) and
  // (output, None): the masks are keywords there).
  std::vector<Tensor> out = self_attn->call({x, x, x}, [&](const std::vector<Tensor>& in) {
    if (in.size() != 3 || !in[0].defined() || !in[1].defined() || !in[2].defined())
      fail("[TransformerEncoderLayer] a forward pre-hook on self_attn must give (query, key, value), got ", in.size(),
           " values");
    return std::vector<Tensor>{
        self_attn->forward(in[0], in[1], in[2], key_padding_mask, false, mask, true, is_causal).first, Tensor()};
  });
  if (out.empty() || !out[0].defined())
    fail("[TransformerEncoderLayer] a forward hook on self_attn must give (output, weights), got no output");
  return dropout1(out[0]);
}

Tensor TransformerEncoderLayerImpl::feed_forward_block(const Tensor& x) {
  return dropout2(linear2(dropout(activation_(linear1(x)))));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  Tensor x = src;
  if (hyper_.norm_first) {
    x = x + self_attention_block(norm1(x), src_mask, src_key_padding_mask, is_causal);
    return x + feed_forward_block(norm2(x));
  }
  x = norm1(x + self_attention_block(x, src_mask, src_key_padding_mask, is_causal));
  return norm2(x + feed_forward_block(x));
}

std::shared_ptr<TransformerEncoderLayerImpl> TransformerEncoderLayerImpl::clone() const {
  const Hyper& h = hyper_;
  auto copy =
      std::make_shared<TransformerEncoderLayerImpl>(h.d_model, h.nhead, h.dim_feedforward, h.dropout, h.activation,
                                                    h.layer_norm_eps, h.batch_first, h.norm_first, h.bias);
  copy->load_state_dict(state_dict());
  copy->train(is_training());
  return copy;
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                                               std::shared_ptr<Module> norm_module)
    : Module("TransformerEncoder") {
  if (!encoder_layer) fail("[TransformerEncoder] encoder_layer is empty");
  if (num_layers < 0) fail("[TransformerEncoder] num_layers must not be negative, got ", num_layers);
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(encoder_layer->clone());
  if (norm_module) norm = register_module("norm", std::move(norm_module));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                       bool is_causal) {
  Tensor x = src;
  for (const std::shared_ptr<Module>& layer : *layers) {
    // Through call(), so that the layers' hooks run (they see (x,) and the layer's output).
    auto& encoder_layer = static_cast<TransformerEncoderLayerImpl&>(*layer);
    std::vector<Tensor> out = encoder_layer.call({x}, [&](const std::vector<Tensor>& in) {
      if (in.size() != 1 || !in[0].defined())
        fail("[TransformerEncoder] a forward pre-hook on a layer must give one input, got ", in.size());
      return std::vector<Tensor>{encoder_layer.forward(in[0], mask, src_key_padding_mask, is_causal)};
    });
    if (out.size() != 1 || !out[0].defined())
      fail("[TransformerEncoder] a forward hook on a layer must give one output, got ", out.size());
    x = out[0];
  }
  return norm ? (*norm)(x) : x;
}

}  // namespace ug::nn
