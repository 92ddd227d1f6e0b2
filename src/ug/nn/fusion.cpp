#include "ug/nn/fusion.h"

#include "ug/nn/layers/linear.h"
#include "ug/nn/layers/normalization.h"
#include "ug/ops/binary.h"

namespace ug::nn::utils {

namespace {

Tensor parameter_of(const Tensor& value, bool requires_grad) {
  Tensor p = value.detach();
  p.requires_grad_(requires_grad);
  p.impl().set_is_parameter(true);
  return p;
}

BatchNormImpl& batch_norm(Module& bn, const char* op) {
  auto* b = dynamic_cast<BatchNormImpl*>(&bn);
  if (!b) fail<TypeError>("[", op, "] expects a BatchNorm1d/2d/3d, got ", bn.type_name());
  if (!b->has_buffer("running_mean") || !b->buffer("running_mean").defined())
    fail("[", op, "] bn.running_mean and bn.running_var must not be None (track_running_stats=True is needed)");
  return *b;
}

Tensor maybe(Module& m, const std::string& name) { return m.has_parameter(name) ? m.parameter(name) : Tensor(); }

}  // namespace

std::pair<Tensor, Tensor> fuse_conv_bn_weights(const Tensor& conv_w, const Tensor& conv_b, const Tensor& bn_rm,
                                               const Tensor& bn_rv, double bn_eps, const Tensor& bn_w,
                                               const Tensor& bn_b, bool transpose) {
  const Tensor b = conv_b.defined() ? conv_b : zeros_like(bn_rm);
  const Tensor gamma = bn_w.defined() ? bn_w : ones_like(bn_rm);
  const Tensor beta = bn_b.defined() ? bn_b : zeros_like(bn_rm);
  const Tensor rsqrt = (bn_rv + bn_eps).rsqrt();
  Dims shape(static_cast<size_t>(conv_w.dim()), 1);
  shape[transpose ? 1 : 0] = -1;
  Tensor w = (conv_w * (gamma * rsqrt).reshape(shape)).to(conv_w.dtype());
  Tensor bias = ((b - bn_rm) * rsqrt * gamma + beta).to(conv_b.defined() ? conv_b.dtype() : conv_w.dtype());
  return {parameter_of(w, conv_w.requires_grad()), parameter_of(bias, b.requires_grad())};
}

std::pair<Tensor, Tensor> fuse_linear_bn_weights(const Tensor& linear_w, const Tensor& linear_b, const Tensor& bn_rm,
                                                 const Tensor& bn_rv, double bn_eps, const Tensor& bn_w,
                                                 const Tensor& bn_b) {
  const Tensor b = linear_b.defined() ? linear_b : zeros_like(bn_rm);
  const Tensor scale = (bn_w.defined() ? bn_w : ones_like(bn_rm)) * (bn_rv + bn_eps).rsqrt();
  Tensor w = linear_w * scale.unsqueeze(-1).to(linear_w.dtype());
  Tensor bias = ((b - bn_rm) * scale + (bn_b.defined() ? bn_b : zeros_like(bn_rm)))
                    .to(linear_b.defined() ? linear_b.dtype() : linear_w.dtype());
  return {parameter_of(w, linear_w.requires_grad()), parameter_of(bias, b.requires_grad())};
}

std::shared_ptr<Module> fuse_conv_bn_eval(const Module& conv, Module& bn, bool transpose) {
  if (conv.is_training() || bn.is_training()) fail("[fuse_conv_bn_eval] fusion only for eval");
  BatchNormImpl& bm = batch_norm(bn, "fuse_conv_bn_eval");
  std::shared_ptr<Module> fused = conv.clone();
  auto [w, bias] =
      fuse_conv_bn_weights(fused->parameter("weight"), maybe(*fused, "bias"), bm.buffer("running_mean"),
                           bm.buffer("running_var"), bm.eps(), maybe(bn, "weight"), maybe(bn, "bias"), transpose);
  fused->register_parameter("weight", w, w.requires_grad());
  fused->register_parameter("bias", bias, bias.requires_grad());
  return fused;
}

std::shared_ptr<Module> fuse_linear_bn_eval(const Module& linear, Module& bn) {
  if (linear.is_training() || bn.is_training()) fail("[fuse_linear_bn_eval] fusion only for eval");
  BatchNormImpl& bm = batch_norm(bn, "fuse_linear_bn_eval");
  const int64_t features = bm.buffer("running_mean").numel();
  const auto* lin = dynamic_cast<const LinearImpl*>(&linear);
  if (!lin) fail<TypeError>("[fuse_linear_bn_eval] expects a Linear, got ", linear.type_name());
  if (lin->out_features() != features && features != 1)
    fail(
        "[fuse_linear_bn_eval] to fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
        "linear.out_features=",
        lin->out_features(), " and bn.num_features=", features);
  std::shared_ptr<Module> fused = linear.clone();
  auto [w, bias] = fuse_linear_bn_weights(fused->parameter("weight"), maybe(*fused, "bias"), bm.buffer("running_mean"),
                                          bm.buffer("running_var"), bm.eps(), maybe(bn, "weight"), maybe(bn, "bias"));
  fused->register_parameter("weight", w, w.requires_grad());
  fused->register_parameter("bias", bias, bias.requires_grad());
  return fused;
}

}  // namespace ug::nn::utils
