// MultiheadAttention (torch.nn.MultiheadAttention), built from linear projections and
// scaled_dot_product_attention.
#pragma once

#include <string>
#include <utility>

#include "ug/nn/layers/linear.h"
#include "ug/nn/module.h"

namespace ug::nn {

/** Masks follow PyTorch's MultiheadAttention: a bool attn_mask ([L, S] or [N * heads, L, S])
 *  or key_padding_mask ([N, S]) is True where attending is NOT allowed; float masks are added
 *  to the scores. is_causal without an attn_mask applies the causal mask. kdim / vdim (0: the
 *  embed_dim) other than embed_dim give keys and values projections of their own
 *  (q_proj_weight, k_proj_weight, v_proj_weight for in_proj_weight); add_bias_kv appends the
 *  learnt bias_k and bias_v to the projected keys and values, add_zero_attn a zero key and
 *  value to every head: one more attended position each, which no mask covers (torch's). */
class MultiheadAttentionImpl : public Module {
  UG_CLONEABLE(MultiheadAttentionImpl)
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                         bool batch_first = false, bool add_bias_kv = false, bool add_zero_attn = false,
                         int64_t kdim = 0, int64_t vdim = 0);
  /** (attn_output, attn_weights): the weights (averaged over heads unless told otherwise) when
   *  need_weights, an undefined tensor otherwise. */
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = {}, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                    bool is_causal = false);
  void reset_parameters() override;
  std::string extra_repr() const override;
  Linear out_proj{nullptr};

 protected:
  void rebind(const CloneMemo& memo) override { memo.remap(out_proj); }

 private:
  int64_t embed_dim_, num_heads_, kdim_, vdim_;
  double dropout_;
  bool batch_first_, add_zero_attn_;
};
UG_MODULE(MultiheadAttention);

}  // namespace ug::nn
