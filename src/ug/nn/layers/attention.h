// MultiheadAttention (torch.nn.MultiheadAttention) and TransformerEncoderLayer (pre- or
// post-norm), built from linear projections and scaled_dot_product_attention.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "ug/nn/containers.h"
#include "ug/nn/layers/dropout.h"
#include "ug/nn/layers/linear.h"
#include "ug/nn/layers/normalization.h"
#include "ug/nn/module.h"

namespace ug::nn {

/** Masks follow PyTorch's MultiheadAttention: a bool attn_mask ([L, S] or [N * heads, L, S])
 *  or key_padding_mask ([N, S]) is True where attending is NOT allowed; float masks are added
 *  to the scores. is_causal without an attn_mask applies the causal mask. */
class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                         bool batch_first = false);
  /** (attn_output, attn_weights): the weights (averaged over heads unless told otherwise) when
   *  need_weights, an undefined tensor otherwise. */
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = {}, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                    bool is_causal = false);
  void reset_parameters() override;
  std::string extra_repr() const override;
  Linear out_proj{nullptr};

 private:
  int64_t embed_dim_, num_heads_;
  double dropout_;
  bool batch_first_;
};
UG_MODULE(MultiheadAttention);

class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1,
                              const std::string& activation = "relu", double layer_norm_eps = 1e-5,
                              bool batch_first = false, bool norm_first = false, bool bias = true);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  /** A layer of the same hyperparameters holding copies of this one's parameters and buffers,
   *  in the same training mode (what torch's TransformerEncoder makes of its layer by deepcopy). */
  std::shared_ptr<TransformerEncoderLayerImpl> clone() const;

  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& key_padding_mask, bool is_causal);
  Tensor feed_forward_block(const Tensor& x);
  struct Hyper {
    int64_t d_model, nhead, dim_feedforward;
    double dropout;
    std::string activation;
    double layer_norm_eps;
    bool batch_first, norm_first, bias;
  } hyper_;
  std::function<Tensor(const Tensor&)> activation_;
};
UG_MODULE(TransformerEncoderLayer);

/** num_layers copies of encoder_layer run in turn, then `norm` if given
 *  (torch.nn.TransformerEncoder): the copies start with the layer's parameters and are trained
 *  apart from it and from each other; `norm` is the module given, not a copy. */
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                         std::shared_ptr<Module> norm = nullptr);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);

  ModuleList layers{nullptr};
  std::shared_ptr<Module> norm;
};
UG_MODULE(TransformerEncoder);

}  // namespace ug::nn
