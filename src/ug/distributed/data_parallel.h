// ug::distributed::DistributedDataParallel: torch's DDP. Wrapping broadcasts rank 0's
// parameters and buffers; each backward then leaves every rank the average gradient.
#pragma once

#include <memory>

#include "ug/distributed/reducer.h"
#include "ug/nn/module.h"

namespace ug::distributed {

struct DdpOptions {
  ProcessGroupPtr process_group;  // the default group when null
  double bucket_cap_mb = 25;
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;  // rank 0's buffers again before every forward, as torch
  // Each .grad becomes a view of its bucket after the first backward: no copy of the averages
  // back into .grad, nor of the gradients into the bucket while .grad is kept (zero_grad with
  // set_to_none=False). A .grad held across a step sees the next step's values, as in torch.
  bool gradient_as_bucket_view = false;
};

/** Copies rank 0's parameters and buffers of `module` into every rank's (in place). */
void broadcast_module_state(nn::Module& module, const ProcessGroupPtr& group, bool parameters = true);

class DistributedDataParallelImpl : public nn::Module {
 public:
  explicit DistributedDataParallelImpl(std::shared_ptr<nn::Module> module, DdpOptions options = {});
  Tensor forward(const Tensor& x) override;
  const std::shared_ptr<nn::Module>& module() const { return module_; }
  Reducer& reducer() { return *reducer_; }

  /** While alive, backward accumulates gradients locally (torch's `with ddp.no_sync():`). */
  class NoSync {
   public:
    explicit NoSync(Reducer& r) : reducer_(r), previous_(r.require_sync()) { r.set_require_sync(false); }
    ~NoSync() { reducer_.set_require_sync(previous_); }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    Reducer& reducer_;
    bool previous_;
  };
  [[nodiscard]] std::unique_ptr<NoSync> no_sync() { return std::make_unique<NoSync>(*reducer_); }

 private:
  std::shared_ptr<nn::Module> module_;
  ProcessGroupPtr group_;
  DdpOptions options_;
  std::unique_ptr<Reducer> reducer_;
};

UG_MODULE(DistributedDataParallel);

}  // namespace ug::distributed
