// ug::train::MirroredStrategy: TensorFlow's tf.distribute.MirroredStrategy and
// MultiWorkerMirroredStrategy for Keras-style training. A model compiled while a strategy's
// scope is open trains data-parallel: one replica is one process of the MPI job (not one device
// of one process, as in TensorFlow), fit wraps the module in DistributedDataParallel (rank 0's
// weights broadcast, gradients averaged in buckets during backward), shards array data with a
// DistributedSampler, averages the logged metrics over the replicas and writes and prints on
// rank 0 only (docs/distributed.md).
//
//   train::MirroredStrategy strategy;             // init_process_group("mpi") if not yet done
//   {
//     auto scope = strategy.scope();
//     trainer.compile({.optimizer = "adam", .loss = "mse"});
//   }
//   trainer.fit(x, y, {.batch_size = 64});        // 64 in all, 64 / num_replicas_in_sync per rank
#pragma once

#include <memory>

#include "ug/distributed/process_group.h"

namespace ug::train {

class MirroredStrategy : public std::enable_shared_from_this<MirroredStrategy> {
 public:
  /** Over `group`, or the default group (joined with init_process_group("mpi") when this
   *  process has not joined one yet). */
  static std::shared_ptr<MirroredStrategy> make(distributed::ProcessGroupPtr group = nullptr);

  /** The processes training together (tf's strategy.num_replicas_in_sync). */
  int num_replicas_in_sync() const;
  const distributed::ProcessGroupPtr& group() const { return group_; }

  /** While alive, Trainer::compile (model.compile) trains under this strategy. Scopes nest;
   *  they belong to the thread that opened them. */
  class Scope {
   public:
    explicit Scope(std::shared_ptr<const MirroredStrategy> strategy);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::shared_ptr<const MirroredStrategy> previous_;
  };
  [[nodiscard]] std::unique_ptr<Scope> scope() const { return std::make_unique<Scope>(shared_from_this()); }

 private:
  explicit MirroredStrategy(distributed::ProcessGroupPtr group) : group_(std::move(group)) {}
  distributed::ProcessGroupPtr group_;
};

/** The strategy of the innermost open scope on this thread, or null (tf.distribute.has_strategy). */
std::shared_ptr<const MirroredStrategy> current_strategy();

}  // namespace ug::train
