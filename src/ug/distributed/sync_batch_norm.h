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

 private:
  int64_t num_features_;
  double eps_, momentum_;
  ProcessGroupPtr group_;
};

UG_MODULE(SyncBatchNorm);

}  // namespace ug::distributed
