#include "ug/nn/layers/normalization.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/unary.h"
#include "ug/nn/functional/normalization.h"
#include "ug/nn/init.h"

namespace ug::nn {

namespace F = functional;

namespace {

const char* flag(bool b) { return b ? "True" : "False"; }

/** Registers the affine parameters and running statistics for num_features channels (empty
 *  slots while num_features < 0, a lazy layer's until its first forward). */
void make_state(Module& m, int64_t num_features, bool affine, bool bias, bool track, DType dtype) {
  const Options opts{.dtype = dtype, .device = {}};
  const bool made = num_features > 0;
  m.register_parameter("weight", made && affine ? empty({num_features}, opts) : Tensor());
  m.register_parameter("bias", made && bias ? empty({num_features}, opts) : Tensor());
  m.register_buffer("running_mean", made && track ? zeros({num_features}, opts) : Tensor());
  m.register_buffer("running_var", made && track ? ones({num_features}, opts) : Tensor());
}

/** A lazy layer's first forward: it becomes the regular layer (LazyBatchNorm1d prints as
 *  BatchNorm1d) and, where it has tensors to make, takes the input's channels, as torch's
 *  (without any it keeps num_features 0). */
void materialize(Module& m, int64_t& num_features, int64_t channels, bool affine, bool bias, bool track) {
  if (m.type_name().starts_with("Lazy")) m.set_type_name(m.type_name().substr(4));
  if (!affine && !track) return;
  num_features = channels;
  make_state(m, num_features, affine, bias, track, get_default_dtype());
  m.reset_parameters();
}

}  // namespace

NormBaseImpl::NormBaseImpl(std::string type_name, int64_t num_features, double eps, std::optional<double> momentum,
                           bool affine, bool track_running_stats, bool bias)
    : Module(std::move(type_name)),
      num_features_(num_features),
      eps_(eps),
      momentum_(momentum),
      affine_(affine),
      track_running_stats_(track_running_stats),
      bias_(affine && bias) {
  // num_features < 0: a lazy layer (torch's LazyBatchNorm*, LazyInstanceNorm*), whose
  // parameters and running statistics the first forward makes.
  if (num_features == 0) fail("[", this->type_name(), "] num_features must be positive, got ", num_features);
  make_state(*this, num_features, affine, bias_, track_running_stats, get_default_dtype());
  register_buffer("num_batches_tracked", track_running_stats ? zeros({}, {.dtype = DType::Int64}) : Tensor());
  reset_parameters();
}

void NormBaseImpl::reset_running_stats() {
  if (num_features_ < 0 || !track_running_stats_) return;
  init::zeros_(buffer("running_mean"));
  init::ones_(buffer("running_var"));
  NoGradGuard no_grad;
  buffer("num_batches_tracked").zero_();
}

void NormBaseImpl::reset_parameters() {
  if (num_features_ < 0) return;
  reset_running_stats();
  if (affine_) init::ones_(parameter("weight"));
  if (bias_) init::zeros_(parameter("bias"));
}

std::string NormBaseImpl::extra_repr() const {
  std::ostringstream s;
  s << std::max<int64_t>(num_features_, 0) << ", eps=" << eps_ << ", momentum=";
  if (momentum_) s << *momentum_;
  else s << "None";
  s << ", affine=" << flag(affine_) << ", bias=" << flag(bias_)
    << ", track_running_stats=" << flag(track_running_stats_);
  return s.str();
}

BatchNormImpl::BatchNormImpl(int spatial_dims, int64_t num_features, double eps, std::optional<double> momentum,
                             bool affine, bool track_running_stats, bool bias)
    : NormBaseImpl("BatchNorm" + std::to_string(spatial_dims) + "d", num_features, eps, momentum, affine,
                   track_running_stats, bias),
      spatial_dims_(spatial_dims) {}

void NormBaseImpl::load_lazy_shapes(const TensorDict& state, const std::string& prefix) {
  if (num_features_ >= 0) return;
  for (const char* name : {"weight", "bias", "running_mean", "running_var"})
    if (const Tensor* t = state.find(prefix + name); t && t->dim() == 1) {
      materialize(*this, num_features_, t->size(0), affine_, bias_, track_running_stats_);
      return;
    }
}

Tensor BatchNormImpl::forward(const Tensor& x) {
  const bool ok = spatial_dims_ == 1 ? (x.dim() == 2 || x.dim() == 3) : x.dim() == spatial_dims_ + 2;
  if (!ok)
    fail("[", type_name(), "] expected ",
         spatial_dims_ == 1 ? std::string("2D or 3D") : std::to_string(spatial_dims_ + 2) + "D", " input, got shape ",
         x.shape());
  if (num_features_ < 0) materialize(*this, num_features_, x.size(1), affine_, bias_, track_running_stats_);
  if (num_features_ >= 0 && x.size(1) != num_features_)
    fail("[", type_name(), "] expected ", num_features_, " channels in dim 1, got shape ", x.shape());
  const bool use_batch_stats = is_training() || !track_running_stats_;
  if (!is_training() || !track_running_stats_)
    return F::batch_norm(x, track_running_stats_ ? buffer("running_mean") : Tensor(),
                         track_running_stats_ ? buffer("running_var") : Tensor(), parameter("weight"),
                         parameter("bias"), use_batch_stats, momentum_.value_or(0.0), eps_);
  Tensor& count = buffer("num_batches_tracked");
  {
    NoGradGuard no_grad;
    count.add_(1);
  }
  Tensor &mean = buffer("running_mean"), &var = buffer("running_var");
  if (momentum_) return F::batch_norm(x, mean, var, parameter("weight"), parameter("bias"), true, *momentum_, eps_);
  // The cumulative average: this batch's statistics weigh 1 / num_batches_tracked, computed
  // with ops (not read as a number), so that a compiled program follows the count.
  Tensor batch_mean = zeros_like(mean), batch_var = zeros_like(var);
  Tensor y = F::batch_norm(x, batch_mean, batch_var, parameter("weight"), parameter("bias"), true, 1.0, eps_);
  NoGradGuard no_grad;
  Tensor weight = count.to(DType::Float64).reciprocal();
  mean.copy_(mean * (1.0 - weight) + batch_mean * weight);
  var.copy_(var * (1.0 - weight) + batch_var * weight);
  return y;
}

InstanceNormImpl::InstanceNormImpl(int spatial_dims, int64_t num_features, double eps, std::optional<double> momentum,
                                   bool affine, bool track_running_stats, bool bias)
    : NormBaseImpl("InstanceNorm" + std::to_string(spatial_dims) + "d", num_features, eps, momentum, affine,
                   track_running_stats, bias),
      spatial_dims_(spatial_dims) {}

Tensor InstanceNormImpl::forward(const Tensor& x) {
  const int64_t unbatched = spatial_dims_ + 1;
  if (x.dim() != unbatched && x.dim() != unbatched + 1)
    fail("[", type_name(), "] expected ", unbatched, "D or ", unbatched + 1, "D input, got shape ", x.shape());
  const bool batched = x.dim() == unbatched + 1;
  if (num_features_ < 0)
    materialize(*this, num_features_, x.size(batched ? 1 : 0), affine_, bias_, track_running_stats_);
  if (affine_ && num_features_ >= 0 && x.size(batched ? 1 : 0) != num_features_)
    fail("[", type_name(), "] expected ", num_features_, " channels in dim ", batched ? 1 : 0, ", got shape ",
         x.shape());
  const Tensor in = batched ? x : x.unsqueeze(0);
  Tensor y = F::instance_norm(in, track_running_stats_ ? buffer("running_mean") : Tensor(),
                              track_running_stats_ ? buffer("running_var") : Tensor(), parameter("weight"),
                              parameter("bias"), is_training() || !track_running_stats_, momentum_.value_or(0.0), eps_);
  return batched ? y : y.squeeze(Dims{0});
}

LayerNormImpl::LayerNormImpl(Dims normalized_shape, double eps, bool elementwise_affine, bool bias)
    : Module("LayerNorm"), normalized_shape_(std::move(normalized_shape)), eps_(eps), affine_(elementwise_affine) {
  register_parameter("weight", affine_ ? empty(normalized_shape_) : Tensor());
  register_parameter("bias", affine_ && bias ? empty(normalized_shape_) : Tensor());
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (Tensor& w = parameter("weight"); w.defined()) init::ones_(w);
  if (Tensor& b = parameter("bias"); b.defined()) init::zeros_(b);
}

Tensor LayerNormImpl::forward(const Tensor& x) {
  return F::layer_norm(x, normalized_shape_, parameter("weight"), parameter("bias"), eps_);
}

std::string LayerNormImpl::extra_repr() const {
  std::ostringstream s;
  s << tuple_repr(normalized_shape_) << ", eps=" << eps_ << ", elementwise_affine=" << flag(affine_);
  return s.str();
}

GroupNormImpl::GroupNormImpl(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : Module("GroupNorm"), num_groups_(num_groups), num_channels_(num_channels), eps_(eps), affine_(affine) {
  if (num_groups <= 0 || num_channels % num_groups != 0)
    fail("[GroupNorm] num_channels (", num_channels, ") must be divisible by num_groups (", num_groups, ")");
  register_parameter("weight", affine ? empty({num_channels}) : Tensor());
  register_parameter("bias", affine ? empty({num_channels}) : Tensor());
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!affine_) return;
  init::ones_(parameter("weight"));
  init::zeros_(parameter("bias"));
}

Tensor GroupNormImpl::forward(const Tensor& x) {
  return F::group_norm(x, num_groups_, parameter("weight"), parameter("bias"), eps_);
}

std::string GroupNormImpl::extra_repr() const {
  std::ostringstream s;
  s << num_groups_ << ", " << num_channels_ << ", eps=" << eps_ << ", affine=" << flag(affine_);
  return s.str();
}

RMSNormImpl::RMSNormImpl(Dims normalized_shape, std::optional<double> eps, bool elementwise_affine)
    : Module("RMSNorm"), normalized_shape_(std::move(normalized_shape)), eps_(eps), affine_(elementwise_affine) {
  register_parameter("weight", affine_ ? empty(normalized_shape_) : Tensor());
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (affine_) init::ones_(parameter("weight"));
}

Tensor RMSNormImpl::forward(const Tensor& x) { return F::rms_norm(x, normalized_shape_, parameter("weight"), eps_); }

std::string RMSNormImpl::extra_repr() const {
  std::ostringstream s;
  s << tuple_repr(normalized_shape_) << ", eps=";
  if (eps_) s << *eps_;
  else s << "None";
  s << ", elementwise_affine=" << flag(affine_);
  return s.str();
}

}  // namespace ug::nn
