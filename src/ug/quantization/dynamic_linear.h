// torch.ao.nn.quantized.dynamic.Linear and torch.ao.quantization.quantize_dynamic: Linear
// layers whose weights are stored as int8 (per tensor or per output channel, symmetric, as
// torch's default qconfigs make them) and whose inputs are quantized to uint8 at each call.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "ug/nn/layers/linear.h"
#include "ug/nn/module.h"
#include "ug/ops/quantized.h"  // the ops the layers run, for users of this header

namespace ug::nn::quantized::dynamic {

/** Buffers: weight (int8 [out, in]), weight_scale (float32, [] or [out]), weight_zero_point
 *  (int64, the same shape) and bias (float32 [out], when the layer has one). It has no
 *  parameters and takes no gradients. Prints as torch's DynamicQuantizedLinear. */
class LinearImpl : public Module {
  UG_CLONEABLE(LinearImpl)
 public:
  /** A layer of zero weights with scale 1 (torch's constructor); from_float fills one. */
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true, bool per_channel = false);
  /** The quantized form of a float Linear: its weight to int8 with scale max|w| / 127.5 (per
   *  output with per_channel), as torch's MinMaxObserver (per_tensor_symmetric or
   *  per_channel_symmetric, qint8) picks it; the bias stays float32. */
  static std::shared_ptr<LinearImpl> from_float(nn::LinearImpl& linear, bool per_channel = false);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  /** The weight dequantized: (weight - zero_point) * scale, float32. */
  Tensor weight();
  /** The int8 weight, its scale and zero point (torch's weight().int_repr(), q_scale(),
   *  q_zero_point(); per channel: q_per_channel_scales(), ...). */
  Tensor& int_weight() { return buffer("weight"); }
  Tensor& weight_scale() { return buffer("weight_scale"); }
  Tensor& weight_zero_point() { return buffer("weight_zero_point"); }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool per_channel() const { return per_channel_; }

 private:
  /** The weight packed for the GEMM (pack_quantized_weight), made again only when the weight
   *  buffer is replaced or changed in place (load_state_dict): not a buffer, so state dicts and
   *  exports see the int8 weight alone. */
  const Tensor& packed_weight();

  int64_t in_features_, out_features_;
  bool per_channel_;
  Tensor packed_;
  Tensor packed_from_;  // the weight packed_ was made from (held, so its address is not reused)
  uint32_t packed_version_ = 0;
};
UG_MODULE(Linear);

}  // namespace ug::nn::quantized::dynamic

namespace ug::quantization {

/** torch.ao.quantization.quantize_dynamic: every module of `model` whose type is named in
 *  qconfig_spec (only "Linear" has a dynamic quantized form) replaced by its quantized form,
 *  in containers and custom modules at any depth, and the model itself when it is a Linear
 *  (torch leaves a bare Linear as it is). dtype: int8 (torch's qint8) only. A copy unless
 *  inplace. per_channel: torch's per_channel_dynamic_qconfig. */
std::shared_ptr<nn::Module> quantize_dynamic(const std::shared_ptr<nn::Module>& model,
                                             const std::set<std::string>& qconfig_spec = {"Linear"},
                                             DType dtype = DType::Int8, bool inplace = false, bool per_channel = false);

}  // namespace ug::quantization
