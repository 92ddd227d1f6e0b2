// ug::distributed::SyncBatchNorm (torch.nn.SyncBatchNorm): batch normalisation whose training
// statistics are those of the whole global batch, all ranks' rows together.
#pragma once

#include "ug/distributed/process_group.h"
#include "ug/nn/module.h"

namespace ug::distributed {

class SyncBatchNormImpl : public nn::Module {
  UG_CLONEABLE(SyncBatchNormImpl)
 public:
  /** Input [N, C, *]. The statistics are summed over the group (default: the world) in
   *  forward, and their gradients in backward; in eval the running statistics are used. */
  explicit SyncBatchNormImpl(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                             ProcessGroupPtr process_group = nullptr);
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  std::string extra_repr() const override;
  int64_t num_features() const { return num_features_; }
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }

 private:
  int64_t num_features_;
  double eps_, momentum_;
  ProcessGroupPtr group_;
};

UG_MODULE(SyncBatchNorm);

/** torch.nn.SyncBatchNorm.convert_sync_batchnorm: `module` with each BatchNorm1d/2d/3d in it
 *  (itself too) replaced by a SyncBatchNorm over `process_group` that holds the same
 *  parameters and running statistics; returns the module, or its replacement. */
std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module,
                                                   ProcessGroupPtr process_group = nullptr);

}  // namespace ug::distributed
