#include "ug/distributed/sync_batch_norm.h"

#include <sstream>

#include "ug/distributed/distributed.h"
#include "ug/graph/grad_mode.h"
#include "ug/nn/functional/normalization.h"
#include "ug/nn/layers/normalization.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"

namespace ug::distributed {

namespace {

/** The sum of t over the group's ranks, differentiable: its gradient is the sum over ranks of
 *  the gradients each rank's loss sends back, which is what every rank's t contributed to. */
Tensor global_sum(const Tensor& t, const ProcessGroupPtr& group) {
  Tensor total = t.detach().clone();
  all_reduce(total, ReduceOp::Sum, group);
  Tensor out = t + (total - t.detach());
  if (out.requires_grad())
    out.register_hook([group](const Tensor& g) {
      Tensor summed = g.detach().clone();
      all_reduce(summed, ReduceOp::Sum, group);
      return summed;
    });
  return out;
}

}  // namespace

SyncBatchNormImpl::SyncBatchNormImpl(int64_t num_features, double eps, double momentum, ProcessGroupPtr process_group)
    : num_features_(num_features), eps_(eps), momentum_(momentum), group_(std::move(process_group)) {
  set_type_name("SyncBatchNorm");
  register_parameter("weight", empty({num_features}));
  register_parameter("bias", empty({num_features}));
  register_buffer("running_mean", zeros({num_features}));
  register_buffer("running_var", ones({num_features}));
  register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::Int64}));
  reset_parameters();
}

void SyncBatchNormImpl::reset_parameters() {
  NoGradGuard no_grad;
  parameter("weight").fill_(1);
  parameter("bias").zero_();
}

Tensor SyncBatchNormImpl::forward(const Tensor& x) {
  if (x.dim() < 2 || x.size(1) != num_features_)
    fail("[SyncBatchNorm] expected input [N, ", num_features_, ", *], got shape ", x.shape());
  if (!is_training())
    return nn::functional::batch_norm(x, buffer("running_mean"), buffer("running_var"), parameter("weight"),
                                      parameter("bias"), false, momentum_, eps_);
  const ProcessGroupPtr group = group_ ? group_ : default_group("SyncBatchNorm");
  Dims reduce = {0};
  Dims stat_shape(static_cast<size_t>(x.dim()), 1);
  stat_shape[1] = num_features_;
  for (int64_t d = 2; d < x.dim(); ++d) reduce.push_back(d);
  const double local_count = static_cast<double>(x.numel() / num_features_);
  // Two passes over the global batch, as a local BatchNorm's: the mean, then the squared
  // deviations from it. One pass of E[x^2] - E[x]^2 cancels the variance of rows far from zero
  // away (an ulp of 1000^2 in float32 is 0.06).
  Tensor sums = global_sum(cat({x.sum(reduce), full({1}, local_count, {.dtype = x.dtype()})}), group);
  Tensor count = sums.narrow(0, num_features_, 1);
  Tensor mean = sums.narrow(0, 0, num_features_) / count;
  Tensor centered = x - mean.view(stat_shape);
  Tensor var = global_sum((centered * centered).sum(reduce), group) / count;  // biased
  {
    NoGradGuard no_grad;
    const double n = count.item<double>();
    buffer("running_mean").mul_(1 - momentum_).add_(mean.detach() * momentum_);
    buffer("running_var").mul_(1 - momentum_).add_(var.detach() * (momentum_ * n / (n - 1)));
    buffer("num_batches_tracked").add_(1);
  }
  Tensor scale = (var + eps_).rsqrt() * parameter("weight");
  return centered * scale.view(stat_shape) + parameter("bias").view(stat_shape);
}

std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module, ProcessGroupPtr process_group) {
  if (auto* bn = dynamic_cast<nn::BatchNormImpl*>(module.get())) {
    if (!bn->affine() || !bn->track_running_stats() || !bn->has_parameter("bias") || !bn->momentum())
      fail("[convert_sync_batchnorm] SyncBatchNorm has an affine weight and bias, running statistics and a momentum; ",
           bn->type_name(), "(", bn->num_features(), ") lacks one of them");
    auto sync = std::make_shared<SyncBatchNormImpl>(bn->num_features(), bn->eps(), *bn->momentum(), process_group);
    // The same tensors, as torch's: an optimizer made before the conversion still updates them.
    for (const char* name : {"weight", "bias"})
      sync->register_parameter(name, bn->parameter(name), bn->parameter(name).requires_grad());
    for (const char* name : {"running_mean", "running_var", "num_batches_tracked"})
      sync->register_buffer(name, bn->buffer(name));
    sync->train(bn->is_training());
    return sync;
  }
  for (const auto& [name, child] : module->named_children())
    if (auto converted = convert_sync_batchnorm(child, process_group); converted != child)
      module->register_module(name, converted);
  return module;
}

std::string SyncBatchNormImpl::extra_repr() const {
  std::ostringstream s;
  s << num_features_ << ", eps=" << eps_ << ", momentum=" << momentum_
    << ", affine=True, bias=True, track_running_stats=True";  // torch's printout; this layer has all three
  return s.str();
}

}  // namespace ug::distributed
