// Dropout, Dropout1d and Dropout2d (inactive in eval) and Embedding (a lookup table of
// trainable rows).
#pragma once

#include <optional>
#include <string>

#include "ug/nn/module.h"

namespace ug::nn {

class DropoutImpl : public Module {
  UG_CLONEABLE(DropoutImpl)
 public:
  explicit DropoutImpl(double p = 0.5, bool inplace = false);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p() const { return p_; }
  /** torch's attributes are plain and settable (a schedule that lowers p during training). */
  void set_p(double p);
  bool inplace() const { return inplace_; }
  void set_inplace(bool inplace) { inplace_ = inplace; }

 protected:
  /** Dropout1d and Dropout2d: `drop` is functional's dropout1d or dropout2d. */
  using Drop = Tensor (*)(const Tensor&, double p, bool training, bool inplace);
  DropoutImpl(std::string type_name, Drop drop, double p, bool inplace);

 private:
  Drop drop_;
  double p_;
  bool inplace_;
};
UG_MODULE(Dropout);

/** Drops whole channels of [N, C, L] or [C, L] (torch.nn.Dropout1d). */
class Dropout1dImpl : public DropoutImpl {
  UG_CLONEABLE(Dropout1dImpl)
 public:
  explicit Dropout1dImpl(double p = 0.5, bool inplace = false);
};
UG_MODULE(Dropout1d);

/** Drops whole channels of [N, C, H, W] or [C, H, W] (torch.nn.Dropout2d). */
class Dropout2dImpl : public DropoutImpl {
  UG_CLONEABLE(Dropout2dImpl)
 public:
  explicit Dropout2dImpl(double p = 0.5, bool inplace = false);
};
UG_MODULE(Dropout2d);

class Dropout3dImpl : public DropoutImpl {
  UG_CLONEABLE(Dropout3dImpl)
 public:
  explicit Dropout3dImpl(double p = 0.5, bool inplace = false);
};
UG_MODULE(Dropout3d);

/** weight [num_embeddings, embedding_dim] drawn from N(0, 1); the padding_idx row starts at
 *  zero and gets no gradient. max_norm, norm_type and scale_grad_by_freq are F.embedding's (the
 *  rows looked up renormalised in place; gradients scaled by each index's inverse count). */
class EmbeddingImpl : public Module {
  UG_CLONEABLE(EmbeddingImpl)
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = {},
                std::optional<double> max_norm = {}, double norm_type = 2.0, bool scale_grad_by_freq = false);
  /** torch.nn.Embedding.from_pretrained: the table is `embeddings` [num_embeddings,
   *  embedding_dim] (its storage shared, its padding_idx row kept), trained unless freeze. */
  static std::shared_ptr<EmbeddingImpl> from_pretrained(const Tensor& embeddings, bool freeze = true,
                                                        std::optional<int64_t> padding_idx = {},
                                                        std::optional<double> max_norm = {}, double norm_type = 2.0,
                                                        bool scale_grad_by_freq = false);
  Tensor forward(const Tensor& indices) override;
  void reset_parameters() override;
  std::string extra_repr() const override;

 private:
  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_;
  bool scale_grad_by_freq_;
};
UG_MODULE(Embedding);

}  // namespace ug::nn
