// The transformer layers of torch.nn: TransformerEncoderLayer and TransformerEncoder,
// TransformerDecoderLayer and TransformerDecoder, and Transformer (an encoder and a decoder),
// post-norm or pre-norm (norm_first), built from MultiheadAttention, Linear and LayerNorm.
// Masks are MultiheadAttention's (attention.h); parameter names and order are torch's, so
// state dicts move between the two.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ug/nn/containers.h"
#include "ug/nn/layers/attention.h"
#include "ug/nn/layers/dropout.h"
#include "ug/nn/layers/linear.h"
#include "ug/nn/layers/normalization.h"
#include "ug/nn/module.h"

namespace ug::nn {

class TransformerEncoderLayerImpl : public Module {
  UG_CLONEABLE(TransformerEncoderLayerImpl)
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1,
                              const std::string& activation = "relu", double layer_norm_eps = 1e-5,
                              bool batch_first = false, bool norm_first = false, bool bias = true);
  /** activation: any function of the feed-forward block's hidden tensor (torch's callable). */
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                              std::function<Tensor(const Tensor&)> activation, double layer_norm_eps = 1e-5,
                              bool batch_first = false, bool norm_first = false, bool bias = true);
  /** activation: a module, the child "activation" (torch's, whose copies each get their own). */
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                              std::shared_ptr<Module> activation, double layer_norm_eps = 1e-5,
                              bool batch_first = false, bool norm_first = false, bool bias = true);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);

  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};

 protected:
  void rebind(const CloneMemo& memo) override;

 private:
  bool norm_first_;
  std::function<Tensor(const Tensor&)> activation_;
  std::shared_ptr<Module> activation_module_;
};
UG_MODULE(TransformerEncoderLayer);

/** Self-attention over the target, attention from the target to the encoder's output
 *  (`memory`), and a feed-forward block, each with a residual and LayerNorm
 *  (torch.nn.TransformerDecoderLayer). */
class TransformerDecoderLayerImpl : public Module {
  UG_CLONEABLE(TransformerDecoderLayerImpl)
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1,
                              const std::string& activation = "relu", double layer_norm_eps = 1e-5,
                              bool batch_first = false, bool norm_first = false, bool bias = true);
  /** activation: any function of the feed-forward block's hidden tensor (torch's callable). */
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                              std::function<Tensor(const Tensor&)> activation, double layer_norm_eps = 1e-5,
                              bool batch_first = false, bool norm_first = false, bool bias = true);
  /** activation: a module, the child "activation" (torch's, whose copies each get their own). */
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                              std::shared_ptr<Module> activation, double layer_norm_eps = 1e-5,
                              bool batch_first = false, bool norm_first = false, bool bias = true);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);

  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};

 protected:
  void rebind(const CloneMemo& memo) override;

 private:
  bool norm_first_;
  std::function<Tensor(const Tensor&)> activation_;
  std::shared_ptr<Module> activation_module_;
};
UG_MODULE(TransformerDecoderLayer);

/** num_layers copies of encoder_layer run in turn, then `norm` if given
 *  (torch.nn.TransformerEncoder): the copies start with the layer's parameters and are trained
 *  apart from it and from each other; `norm` is the module given, not a copy. */
class TransformerEncoderImpl : public Module {
  UG_CLONEABLE(TransformerEncoderImpl)
 public:
  TransformerEncoderImpl(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                         std::shared_ptr<Module> norm = nullptr);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);

  ModuleList layers{nullptr};
  std::shared_ptr<Module> norm;

 protected:
  void rebind(const CloneMemo& memo) override {
    memo.remap(layers);
    memo.remap(norm);
  }
};
UG_MODULE(TransformerEncoder);

/** num_layers copies of decoder_layer, each attending to the same memory, then `norm` if given
 *  (torch.nn.TransformerDecoder). */
class TransformerDecoderImpl : public Module {
  UG_CLONEABLE(TransformerDecoderImpl)
 public:
  TransformerDecoderImpl(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                         std::shared_ptr<Module> norm = nullptr);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);

  ModuleList layers{nullptr};
  std::shared_ptr<Module> norm;

 protected:
  void rebind(const CloneMemo& memo) override {
    memo.remap(layers);
    memo.remap(norm);
  }
};
UG_MODULE(TransformerDecoder);

/** The encoder-decoder model of "Attention Is All You Need" (torch.nn.Transformer): an encoder
 *  and a decoder stack, each ending in a LayerNorm, with every matrix Xavier-initialised. A
 *  custom encoder or decoder replaces the built one. */
class TransformerImpl : public Module {
  UG_CLONEABLE(TransformerImpl)
 public:
  TransformerImpl(int64_t d_model = 512, int64_t nhead = 8, int64_t num_encoder_layers = 6,
                  int64_t num_decoder_layers = 6, int64_t dim_feedforward = 2048, double dropout = 0.1,
                  const std::string& activation = "relu", TransformerEncoder custom_encoder = nullptr,
                  TransformerDecoder custom_decoder = nullptr, double layer_norm_eps = 1e-5, bool batch_first = false,
                  bool norm_first = false, bool bias = true);
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool src_is_causal = false, bool tgt_is_causal = false, bool memory_is_causal = false);
  /** [sz, sz] float mask: -inf above the diagonal, 0 elsewhere (a target position attends to
   *  itself and the positions before it). */
  static Tensor generate_square_subsequent_mask(int64_t sz, std::optional<DType> dtype = std::nullopt);

  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};

 protected:
  void rebind(const CloneMemo& memo) override {
    memo.remap(encoder);
    memo.remap(decoder);
  }

 private:
  int64_t d_model_;
  bool batch_first_;
};
UG_MODULE(Transformer);

}  // namespace ug::nn
