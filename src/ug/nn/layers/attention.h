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
 *  to the scores. is_causal without an attn_mask applies the causal mask. */
class MultiheadAttentionImpl : public Module {
  UG_CLONEABLE(MultiheadAttentionImpl)
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

 protected:
  void rebind(const CloneMemo& memo) override { memo.remap(out_proj); }

 private:
  int64_t embed_dim_, num_heads_;
  double dropout_;
  bool batch_first_;
};
UG_MODULE(MultiheadAttention);

}  // namespace ug::nn
