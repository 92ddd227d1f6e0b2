// Normalization layers: BatchNorm1d/2d (running statistics), InstanceNorm1d/2d, LayerNorm,
// GroupNorm, RMSNorm.
#pragma once

#include <optional>
#include <string>

#include "ug/nn/module.h"

namespace ug::nn {

/** What BatchNorm and InstanceNorm share (torch's _NormBase): an affine weight and bias over
 *  num_features channels when asked (bias = false keeps the weight only), running statistics and
 *  num_batches_tracked when tracked, and torch's printout. */
class NormBaseImpl : public Module {
 public:
  NormBaseImpl(std::string type_name, int64_t num_features, double eps, std::optional<double> momentum, bool affine,
               bool track_running_stats, bool bias);
  void reset_parameters() override;
  void load_lazy_shapes(const TensorDict& state, const std::string& prefix) override;
  std::string extra_repr() const override;
  int64_t num_features() const { return num_features_; }
  double eps() const { return eps_; }
  bool affine() const { return affine_; }
  bool track_running_stats() const { return track_running_stats_; }
  /** The running statistics' update rate, settable; unset is a cumulative average (torch's None). */
  std::optional<double>& momentum() { return momentum_; }
  /** running_mean to 0, running_var to 1 and num_batches_tracked to 0, when tracked (torch's). */
  void reset_running_stats();

 protected:
  int64_t num_features_;
  double eps_;
  std::optional<double> momentum_;
  bool affine_, track_running_stats_, bias_;
};

/** BatchNorm1d ([N, C] or [N, C, L]) and BatchNorm2d ([N, C, H, W]): batch statistics in
 *  training (updating running_mean/running_var), running statistics in eval. momentum
 *  unset means a cumulative average over the batches seen, as in PyTorch. */
class BatchNormImpl : public NormBaseImpl {
  UG_CLONEABLE(BatchNormImpl)
 public:
  BatchNormImpl(int spatial_dims, int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                bool affine = true, bool track_running_stats = true, bool bias = true);
  Tensor forward(const Tensor& x) override;

 private:
  int spatial_dims_;
};

class BatchNorm1dImpl : public BatchNormImpl {
  UG_CLONEABLE(BatchNorm1dImpl)
 public:
  explicit BatchNorm1dImpl(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                           bool affine = true, bool track_running_stats = true, bool bias = true)
      : BatchNormImpl(1, num_features, eps, momentum, affine, track_running_stats, bias) {}
};
UG_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public BatchNormImpl {
  UG_CLONEABLE(BatchNorm2dImpl)
 public:
  explicit BatchNorm2dImpl(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                           bool affine = true, bool track_running_stats = true, bool bias = true)
      : BatchNormImpl(2, num_features, eps, momentum, affine, track_running_stats, bias) {}
};
UG_MODULE(BatchNorm2d);

class BatchNorm3dImpl : public BatchNormImpl {
  UG_CLONEABLE(BatchNorm3dImpl)
 public:
  explicit BatchNorm3dImpl(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                           bool affine = true, bool track_running_stats = true, bool bias = true)
      : BatchNormImpl(3, num_features, eps, momentum, affine, track_running_stats, bias) {}
};
UG_MODULE(BatchNorm3d);

/** InstanceNorm1d ([N, C, L] or unbatched [C, L]) and InstanceNorm2d ([N, C, H, W] or [C, H, W]):
 *  each channel of each sample normalized over its spatial dims. As torch's: no affine weight and
 *  no running statistics unless asked; with track_running_stats the running statistics are
 *  updated in training and used in eval (num_batches_tracked is kept but not counted). */
class InstanceNormImpl : public NormBaseImpl {
  UG_CLONEABLE(InstanceNormImpl)
 public:
  InstanceNormImpl(int spatial_dims, int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                   bool affine = false, bool track_running_stats = false, bool bias = true);
  Tensor forward(const Tensor& x) override;

 private:
  int spatial_dims_;
};

class InstanceNorm1dImpl : public InstanceNormImpl {
  UG_CLONEABLE(InstanceNorm1dImpl)
 public:
  explicit InstanceNorm1dImpl(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                              bool affine = false, bool track_running_stats = false, bool bias = true)
      : InstanceNormImpl(1, num_features, eps, momentum, affine, track_running_stats, bias) {}
};
UG_MODULE(InstanceNorm1d);

class InstanceNorm2dImpl : public InstanceNormImpl {
  UG_CLONEABLE(InstanceNorm2dImpl)
 public:
  explicit InstanceNorm2dImpl(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                              bool affine = false, bool track_running_stats = false, bool bias = true)
      : InstanceNormImpl(2, num_features, eps, momentum, affine, track_running_stats, bias) {}
};
UG_MODULE(InstanceNorm2d);

class InstanceNorm3dImpl : public InstanceNormImpl {
  UG_CLONEABLE(InstanceNorm3dImpl)
 public:
  explicit InstanceNorm3dImpl(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                              bool affine = false, bool track_running_stats = false, bool bias = true)
      : InstanceNormImpl(3, num_features, eps, momentum, affine, track_running_stats, bias) {}
};
UG_MODULE(InstanceNorm3d);

class LayerNormImpl : public Module {
  UG_CLONEABLE(LayerNormImpl)
 public:
  explicit LayerNormImpl(Dims normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  std::string extra_repr() const override;

 private:
  Dims normalized_shape_;
  double eps_;
  bool affine_;
};
UG_MODULE(LayerNorm);

class GroupNormImpl : public Module {
  UG_CLONEABLE(GroupNormImpl)
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  std::string extra_repr() const override;

 private:
  int64_t num_groups_, num_channels_;
  double eps_;
  bool affine_;
};
UG_MODULE(GroupNorm);

class RMSNormImpl : public Module {
  UG_CLONEABLE(RMSNormImpl)
 public:
  explicit RMSNormImpl(Dims normalized_shape, std::optional<double> eps = {}, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  std::string extra_repr() const override;

 private:
  Dims normalized_shape_;
  std::optional<double> eps_;
  bool affine_;
};
UG_MODULE(RMSNorm);

}  // namespace ug::nn
