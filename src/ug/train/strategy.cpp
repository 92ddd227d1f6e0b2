#include "ug/train/strategy.h"

#include "ug/core/error.h"
#include "ug/distributed/distributed.h"

namespace ug::train {

namespace {
thread_local std::shared_ptr<const MirroredStrategy> innermost;
}  // namespace

std::shared_ptr<MirroredStrategy> MirroredStrategy::make(distributed::ProcessGroupPtr group) {
  if (!group) {
    if (!distributed::is_initialized()) distributed::init_process_group("mpi");
    group = distributed::default_group("MirroredStrategy");
  }
  if (group->rank() < 0) fail<ValueError>("[MirroredStrategy] this process is not a member of the group");
  return std::shared_ptr<MirroredStrategy>(new MirroredStrategy(std::move(group)));
}

int MirroredStrategy::num_replicas_in_sync() const { return group_->size(); }

MirroredStrategy::Scope::Scope(std::shared_ptr<const MirroredStrategy> strategy) : previous_(std::move(innermost)) {
  innermost = std::move(strategy);
}

MirroredStrategy::Scope::~Scope() { innermost = std::move(previous_); }

std::shared_ptr<const MirroredStrategy> current_strategy() { return innermost; }

}  // namespace ug::train
