#include "ug/nn/layers/transformer.h"

#include <limits>
#include <vector>

#include "ug/nn/init.h"
#include "ug/nn/layers/activation.h"
#include "ug/ops/binary.h"

namespace ug::nn {

namespace {

std::function<Tensor(const Tensor&)> checked_activation(const std::string& name, const char* layer) {
  if (name != "relu" && name != "gelu")
    fail("[", layer, "] activation must be \"relu\" or \"gelu\", got \"", name, "\"");
  return activation(name);
}

/** x + branch, the branch first cast to x's dtype where that is the sum's (under autocast a
 *  branch ends in bfloat16 and the stream is float32): its low-precision buffer is then freed
 *  before the sum is made instead of held beside its float32 copy, the same sum bit for bit. */
Tensor add_residual(const Tensor& x, Tensor branch) {
  if (branch.dtype() != x.dtype() && promote_types(x.dtype(), branch.dtype()) == x.dtype())
    branch = branch.to(x.dtype());
  return x + branch;
}

/** attn(query, kv, kv)'s output through call(), so that hooks on the attention run as they do
 *  in torch (they see (query, kv, kv) and (output, None): the masks are keywords there). */
Tensor attend(MultiheadAttentionImpl& attn, const Tensor& query, const Tensor& kv, const Tensor& mask,
              const Tensor& key_padding_mask, bool is_causal, const char* layer) {
  std::vector<Tensor> out = attn.call({query, kv, kv}, [&](const std::vector<Tensor>& in) {
    if (in.size() != 3 || !in[0].defined() || !in[1].defined() || !in[2].defined())
      fail("[", layer, "] a forward pre-hook on its attention must give (query, key, value), got ", in.size(),
           " values");
    return std::vector<Tensor>{attn.forward(in[0], in[1], in[2], key_padding_mask, false, mask, true, is_causal).first,
                               Tensor()};
  });
  if (out.empty() || !out[0].defined())
    fail("[", layer, "] a forward hook on its attention must give (output, weights), got no output");
  return out[0];
}

/** A stacked layer called through call(), so that its hooks run (they see the positional
 *  tensors, as torch's do: (x,) in an encoder, (x, memory) in a decoder). */
Tensor call_layer(Module& layer, std::vector<Tensor> inputs,
                  const std::function<Tensor(const std::vector<Tensor>&)>& run, const char* stack) {
  const size_t n = inputs.size();
  std::vector<Tensor> out = layer.call(std::move(inputs), [&](const std::vector<Tensor>& in) {
    if (in.size() != n || !in[0].defined())
      fail("[", stack, "] a forward pre-hook on a layer must give ", n, " inputs, got ", in.size());
    return std::vector<Tensor>{run(in)};
  });
  if (out.size() != 1 || !out[0].defined())
    fail("[", stack, "] a forward hook on a layer must give one output, got ", out.size());
  return out[0];
}

}  // namespace

// ---- encoder layer ------------------------------------------------------------------------

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                         double dropout_p, const std::string& activation_name,
                                                         double layer_norm_eps, bool batch_first, bool norm_first,
                                                         bool bias)
    : TransformerEncoderLayerImpl(d_model, nhead, dim_feedforward, dropout_p,
                                  checked_activation(activation_name, "TransformerEncoderLayer"), layer_norm_eps,
                                  batch_first, norm_first, bias) {}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                         double dropout_p,
                                                         std::function<Tensor(const Tensor&)> activation,
                                                         double layer_norm_eps, bool batch_first, bool norm_first,
                                                         bool bias)
    : Module("TransformerEncoderLayer"), norm_first_(norm_first), activation_(std::move(activation)) {
  self_attn = register_module("self_attn", MultiheadAttention(d_model, nhead, dropout_p, bias, batch_first));
  linear1 = register_module("linear1", Linear(d_model, dim_feedforward, bias));
  dropout = register_module("dropout", Dropout(dropout_p));
  linear2 = register_module("linear2", Linear(dim_feedforward, d_model, bias));
  norm1 = register_module("norm1", LayerNorm(Dims{d_model}, layer_norm_eps, true, bias));
  norm2 = register_module("norm2", LayerNorm(Dims{d_model}, layer_norm_eps, true, bias));
  dropout1 = register_module("dropout1", Dropout(dropout_p));
  dropout2 = register_module("dropout2", Dropout(dropout_p));
}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                         double dropout_p, std::shared_ptr<Module> activation,
                                                         double layer_norm_eps, bool batch_first, bool norm_first,
                                                         bool bias)
    : TransformerEncoderLayerImpl(d_model, nhead, dim_feedforward, dropout_p, std::function<Tensor(const Tensor&)>(),
                                  layer_norm_eps, batch_first, norm_first, bias) {
  if (!activation) fail("[TransformerEncoderLayer] expected an activation module, got none");
  activation_module_ = register_module("activation", std::move(activation));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  auto self_attention = [&](const Tensor& x) {
    return dropout1(attend(*self_attn, x, x, src_mask, src_key_padding_mask, is_causal, "TransformerEncoderLayer"));
  };
  auto activate = [&](const Tensor& x) { return activation_module_ ? (*activation_module_)(x) : activation_(x); };
  auto feed_forward = [&](const Tensor& x) { return dropout2(linear2(dropout(activate(linear1(x))))); };
  if (norm_first_) {
    Tensor x = add_residual(src, self_attention(norm1(src)));
    return add_residual(x, feed_forward(norm2(x)));
  }
  Tensor x = norm1(add_residual(src, self_attention(src)));
  Tensor sum = add_residual(x, feed_forward(x));
  x = Tensor();  // the stream before the feed-forward, read by nothing now: freed before norm2 runs
  return norm2(sum);
}

void TransformerEncoderLayerImpl::rebind(const CloneMemo& memo) {
  memo.remap(self_attn);
  for (Linear* l : {&linear1, &linear2}) memo.remap(*l);
  for (Dropout* d : {&dropout, &dropout1, &dropout2}) memo.remap(*d);
  for (LayerNorm* n : {&norm1, &norm2}) memo.remap(*n);
  memo.remap(activation_module_);
}

// ---- decoder layer ------------------------------------------------------------------------

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                         double dropout_p, const std::string& activation_name,
                                                         double layer_norm_eps, bool batch_first, bool norm_first,
                                                         bool bias)
    : TransformerDecoderLayerImpl(d_model, nhead, dim_feedforward, dropout_p,
                                  checked_activation(activation_name, "TransformerDecoderLayer"), layer_norm_eps,
                                  batch_first, norm_first, bias) {}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                         double dropout_p,
                                                         std::function<Tensor(const Tensor&)> activation,
                                                         double layer_norm_eps, bool batch_first, bool norm_first,
                                                         bool bias)
    : Module("TransformerDecoderLayer"), norm_first_(norm_first), activation_(std::move(activation)) {
  self_attn = register_module("self_attn", MultiheadAttention(d_model, nhead, dropout_p, bias, batch_first));
  multihead_attn = register_module("multihead_attn", MultiheadAttention(d_model, nhead, dropout_p, bias, batch_first));
  linear1 = register_module("linear1", Linear(d_model, dim_feedforward, bias));
  dropout = register_module("dropout", Dropout(dropout_p));
  linear2 = register_module("linear2", Linear(dim_feedforward, d_model, bias));
  norm1 = register_module("norm1", LayerNorm(Dims{d_model}, layer_norm_eps, true, bias));
  norm2 = register_module("norm2", LayerNorm(Dims{d_model}, layer_norm_eps, true, bias));
  norm3 = register_module("norm3", LayerNorm(Dims{d_model}, layer_norm_eps, true, bias));
  dropout1 = register_module("dropout1", Dropout(dropout_p));
  dropout2 = register_module("dropout2", Dropout(dropout_p));
  dropout3 = register_module("dropout3", Dropout(dropout_p));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                         double dropout_p, std::shared_ptr<Module> activation,
                                                         double layer_norm_eps, bool batch_first, bool norm_first,
                                                         bool bias)
    : TransformerDecoderLayerImpl(d_model, nhead, dim_feedforward, dropout_p, std::function<Tensor(const Tensor&)>(),
                                  layer_norm_eps, batch_first, norm_first, bias) {
  if (!activation) fail("[TransformerDecoderLayer] expected an activation module, got none");
  activation_module_ = register_module("activation", std::move(activation));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                            bool memory_is_causal) {
  constexpr const char* kLayer = "TransformerDecoderLayer";
  if (!memory.defined()) fail("[", kLayer, "] needs the encoder's output (memory)");
  auto self_attention = [&](const Tensor& x) {
    return dropout1(attend(*self_attn, x, x, tgt_mask, tgt_key_padding_mask, tgt_is_causal, kLayer));
  };
  auto cross_attention = [&](const Tensor& x) {
    return dropout2(attend(*multihead_attn, x, memory, memory_mask, memory_key_padding_mask, memory_is_causal, kLayer));
  };
  auto activate = [&](const Tensor& x) { return activation_module_ ? (*activation_module_)(x) : activation_(x); };
  auto feed_forward = [&](const Tensor& x) { return dropout3(linear2(dropout(activate(linear1(x))))); };
  if (norm_first_) {
    Tensor x = add_residual(tgt, self_attention(norm1(tgt)));
    x = add_residual(x, cross_attention(norm2(x)));
    return add_residual(x, feed_forward(norm3(x)));
  }
  // Each sum replaces the stream before the next norm runs, so the old stream is freed first.
  Tensor x = norm1(add_residual(tgt, self_attention(tgt)));
  Tensor sum = add_residual(x, cross_attention(x));
  x = norm2(sum);
  sum = add_residual(x, feed_forward(x));
  x = Tensor();
  return norm3(sum);
}

void TransformerDecoderLayerImpl::rebind(const CloneMemo& memo) {
  for (MultiheadAttention* a : {&self_attn, &multihead_attn}) memo.remap(*a);
  for (Linear* l : {&linear1, &linear2}) memo.remap(*l);
  for (Dropout* d : {&dropout, &dropout1, &dropout2, &dropout3}) memo.remap(*d);
  for (LayerNorm* n : {&norm1, &norm2, &norm3}) memo.remap(*n);
  memo.remap(activation_module_);
}

// ---- stacks -------------------------------------------------------------------------------

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
    auto& encoder_layer = static_cast<TransformerEncoderLayerImpl&>(*layer);
    x = call_layer(
        encoder_layer, {x},
        [&](const std::vector<Tensor>& in) {
          return encoder_layer.forward(in[0], mask, src_key_padding_mask, is_causal);
        },
        "TransformerEncoder");
  }
  return norm ? (*norm)(x) : x;
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                                               std::shared_ptr<Module> norm_module)
    : Module("TransformerDecoder") {
  if (!decoder_layer) fail("[TransformerDecoder] decoder_layer is empty");
  if (num_layers < 0) fail("[TransformerDecoder] num_layers must not be negative, got ", num_layers);
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(decoder_layer->clone());
  if (norm_module) norm = register_module("norm", std::move(norm_module));
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                       bool memory_is_causal) {
  Tensor x = tgt;
  for (const std::shared_ptr<Module>& layer : *layers) {
    auto& decoder_layer = static_cast<TransformerDecoderLayerImpl&>(*layer);
    x = call_layer(
        decoder_layer, {x, memory},
        [&](const std::vector<Tensor>& in) {
          return decoder_layer.forward(in[0], in[1], tgt_mask, memory_mask, tgt_key_padding_mask,
                                       memory_key_padding_mask, tgt_is_causal, memory_is_causal);
        },
        "TransformerDecoder");
  }
  return norm ? (*norm)(x) : x;
}

// ---- Transformer --------------------------------------------------------------------------

TransformerImpl::TransformerImpl(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers,
                                 int64_t dim_feedforward, double dropout, const std::string& activation,
                                 TransformerEncoder custom_encoder, TransformerDecoder custom_decoder,
                                 double layer_norm_eps, bool batch_first, bool norm_first, bool bias)
    : Module("Transformer"), d_model_(d_model), batch_first_(batch_first) {
  auto layer_norm = [&] { return LayerNorm(Dims{d_model}, layer_norm_eps, true, bias).ptr(); };
  encoder = register_module(
      "encoder", custom_encoder
                     ? custom_encoder
                     : TransformerEncoder(TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                                  layer_norm_eps, batch_first, norm_first, bias),
                                          num_encoder_layers, layer_norm()));
  decoder = register_module(
      "decoder", custom_decoder
                     ? custom_decoder
                     : TransformerDecoder(TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                                  layer_norm_eps, batch_first, norm_first, bias),
                                          num_decoder_layers, layer_norm()));
  // torch's _reset_parameters: every matrix Xavier-uniform, vectors as their layers made them.
  for (Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask,
                                bool src_is_causal, bool tgt_is_causal, bool memory_is_causal) {
  const int64_t batch_dim = batch_first_ ? 0 : 1;
  if (src.dim() == 3 && tgt.dim() == 3 && src.size(batch_dim) != tgt.size(batch_dim))
    fail("[Transformer] the batch number of src and tgt must be equal, got shapes ", src.shape(), " and ", tgt.shape(),
         " (batch_first=", batch_first_ ? "True" : "False", ")");
  if (src.size(-1) != d_model_ || tgt.size(-1) != d_model_)
    fail("[Transformer] the feature number of src and tgt must be equal to d_model (", d_model_, "), got shapes ",
         src.shape(), " and ", tgt.shape());
  const Tensor memory = call_layer(
      *encoder, {src},
      [&](const std::vector<Tensor>& in) {
        return encoder->forward(in[0], src_mask, src_key_padding_mask, src_is_causal);
      },
      "Transformer");
  return call_layer(
      *decoder, {tgt, memory},
      [&](const std::vector<Tensor>& in) {
        return decoder->forward(in[0], in[1], tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                                tgt_is_causal, memory_is_causal);
      },
      "Transformer");
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz, std::optional<DType> dtype) {
  if (sz < 0) fail("[Transformer] generate_square_subsequent_mask: sz must not be negative, got ", sz);
  const Tensor i = arange(sz, {.dtype = DType::Int64});
  return where(gt(i.unsqueeze(0), i.unsqueeze(1)), -std::numeric_limits<double>::infinity(),
               zeros({}, {.dtype = dtype}));
}

}  // namespace ug::nn
