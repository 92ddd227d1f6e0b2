#include "ug/distributed/data_parallel.h"

#include "ug/distributed/distributed.h"
#include "ug/graph/grad_mode.h"

namespace ug::distributed {

void broadcast_module_state(nn::Module& module, const ProcessGroupPtr& group, bool parameters) {
  std::vector<WorkPtr> works;
  std::vector<Tensor> tensors = module.buffers();
  if (parameters)
    for (const Tensor& p : module.parameters()) tensors.push_back(p);
  // Through the public broadcast: inside a compiled step's trace it is an op of the program
  // (every forward's buffers from rank 0, as eagerly).
  const int root = group->world_ranks().front();
  for (const Tensor& t : tensors) works.push_back(broadcast(t.detach(), root, group, /*async_op=*/true));
  for (const WorkPtr& w : works) w->wait();
}

DistributedDataParallelImpl::DistributedDataParallelImpl(std::shared_ptr<nn::Module> module, DdpOptions options)
    : module_(std::move(module)), options_(std::move(options)) {
  if (!module_) fail("[DistributedDataParallel] needs a module, got none");
  if (options_.bucket_cap_mb <= 0)
    fail("[DistributedDataParallel] bucket_cap_mb must be positive, got ", options_.bucket_cap_mb);
  group_ = options_.process_group ? options_.process_group : default_group("DistributedDataParallel");
  register_module("module", module_);
  broadcast_module_state(*module_, group_);
  reducer_ = std::make_unique<Reducer>(module_->parameters(), group_,
                                       static_cast<size_t>(options_.bucket_cap_mb * 1024 * 1024),
                                       options_.find_unused_parameters, options_.gradient_as_bucket_view);
}

Tensor DistributedDataParallelImpl::forward(const Tensor& x) {
  reducer_->prepare_for_forward();
  if (options_.broadcast_buffers && GradMode::is_enabled()) broadcast_module_state(*module_, group_, false);
  Tensor y = (*module_)(x);
  reducer_->prepare_for_backward({y});
  return y;
}

}  // namespace ug::distributed
