#include "ug/quantization/dynamic_linear.h"

#include <limits>

#include "ug/graph/grad_mode.h"
#include "ug/nn/containers.h"
#include "ug/ops/binary.h"
#include "ug/ops/quantized.h"

namespace ug::nn::quantized::dynamic {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool bias, bool per_channel)
    : Module("DynamicQuantizedLinear"),
      in_features_(in_features),
      out_features_(out_features),
      per_channel_(per_channel) {
  if (in_features < 0 || out_features <= 0)
    fail("[DynamicQuantizedLinear] in_features must be >= 0 and out_features positive, got ", in_features, " and ",
         out_features);
  const Dims qshape = per_channel ? Dims{out_features} : Dims{};
  register_buffer("weight", zeros({out_features, in_features}, {.dtype = DType::Int8, .device = {}}));
  register_buffer("weight_scale", ones(qshape, {.dtype = DType::Float32, .device = {}}));
  register_buffer("weight_zero_point", zeros(qshape, {.dtype = DType::Int64, .device = {}}));
  if (bias) register_buffer("bias", zeros({out_features}, {.dtype = DType::Float32, .device = {}}));
}

std::shared_ptr<LinearImpl> LinearImpl::from_float(nn::LinearImpl& linear, bool per_channel) {
  if (linear.in_features() < 0) fail("[quantize_dynamic] a lazy Linear must run once before it is quantized");
  NoGradGuard no_grad;
  const bool has_bias = linear.bias().defined();
  auto q = std::make_shared<LinearImpl>(linear.in_features(), linear.out_features(), has_bias, per_channel);
  Tensor w = linear.weight().detach().to(DType::Float32);
  // MinMaxObserver, symmetric qint8: scale = max(|min|, |max|) / ((127 - -128) / 2), at least
  // float32's eps; zero point 0.
  Tensor amax = per_channel ? w.abs().amax(Dims{1}) : w.abs().amax();
  Tensor scale = clamp(amax / 127.5, Scalar(static_cast<double>(std::numeric_limits<float>::epsilon())), {});
  Tensor zp = zeros(scale.shape(), {.dtype = DType::Int64, .device = {}});
  q->register_buffer("weight", per_channel ? quantize_per_channel(w, scale, zp, 0, DType::Int8)
                                           : quantize_per_tensor(w, scale.item<double>(), 0, DType::Int8));
  q->register_buffer("weight_scale", scale);
  q->register_buffer("weight_zero_point", zp);
  if (has_bias) q->register_buffer("bias", linear.bias().detach().to(DType::Float32));
  return q;
}

Tensor LinearImpl::forward(const Tensor& x) {
  if (x.dim() == 0 || x.size(-1) != in_features_)
    fail("[DynamicQuantizedLinear] expected input with last dim ", in_features_, ", got shape ", x.shape());
  return quantized_linear_dynamic(x, int_weight(), weight_scale(), weight_zero_point(),
                                  has_buffer("bias") ? buffer("bias") : Tensor(), true, packed_weight());
}

const Tensor& LinearImpl::packed_weight() {
  const Tensor& w = int_weight();
  if (!packed_from_.defined() || w.raw_data() != packed_from_.raw_data() || w.version() != packed_version_) {
    packed_ = pack_quantized_weight(w);
    packed_from_ = w;
    packed_version_ = w.version();
  }
  return packed_;
}

Tensor LinearImpl::weight() {
  return per_channel_ ? dequantize(int_weight(), weight_scale(), weight_zero_point(), 0)
                      : dequantize(int_weight(), weight_scale().item<double>(), weight_zero_point().item<int64_t>());
}

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(in_features_) + ", out_features=" + std::to_string(out_features_) +
         ", dtype=unigrad.qint8, qscheme=" + (per_channel_ ? "per_channel_affine" : "per_tensor_affine");
}

}  // namespace ug::nn::quantized::dynamic

namespace ug::quantization {

namespace {

using QLinear = nn::quantized::dynamic::LinearImpl;

/** The quantized form of m, or null when m is not a (plain) Linear. */
std::shared_ptr<nn::Module> quantized_form(nn::Module& m, bool per_channel) {
  auto* linear = dynamic_cast<nn::LinearImpl*>(&m);
  if (!linear || m.type_name() != "Linear") return nullptr;
  return QLinear::from_float(*linear, per_channel);
}

void convert(nn::Module& parent, bool per_channel) {
  int64_t i = 0;
  for (auto& [name, child] : parent.named_children()) {
    if (auto q = quantized_form(*child, per_channel)) {
      // Containers keep their modules in order too: they replace in place.
      if (auto* seq = dynamic_cast<nn::SequentialImpl*>(&parent)) seq->set(i, q);
      else if (auto* list = dynamic_cast<nn::ModuleListImpl*>(&parent)) list->set(i, q);
      else parent.register_module(name, q);
    } else {
      convert(*child, per_channel);
    }
    ++i;
  }
}

}  // namespace

std::shared_ptr<nn::Module> quantize_dynamic(const std::shared_ptr<nn::Module>& model,
                                             const std::set<std::string>& qconfig_spec, DType dtype, bool inplace,
                                             bool per_channel) {
  if (!model) fail("[quantize_dynamic] model is None");
  if (dtype != DType::Int8)
    fail<TypeError>("[quantize_dynamic] dtype must be int8 (torch's qint8), got ", dtype,
                    ": only int8 weights with uint8 activations are supported");
  for (const std::string& type : qconfig_spec)
    if (type != "Linear")
      fail<TypeError>("[quantize_dynamic] qconfig_spec names ", type,
                      ", which has no dynamic quantized form (only Linear does)");
  if (qconfig_spec.empty()) return inplace ? model : model->clone();
  std::shared_ptr<nn::Module> out = inplace ? model : model->clone();
  if (auto q = quantized_form(*out, per_channel)) return q;
  convert(*out, per_channel);
  return out;
}

}  // namespace ug::quantization
