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
//
// TensorFlow's custom loop over a strategy, the same in C++:
//
//   Tensor x_local = strategy.local_part(x_global);       // experimental_distribute_dataset
//   {
//     auto replica = strategy.replica_context();          // strategy.run(step, ...)
//     Tensor loss = compute_average_loss(per_example);    // over the global batch
//     ... opt.apply_gradients(pairs);                     // the gradients summed over the replicas
//   }
//   Tensor total = strategy.reduce("SUM", loss);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "ug/distributed/process_group.h"
#include "ug/optim/optimizer.h"

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

  /** What strategy.run opens around a replica's step: while it lives, the strategy is the
   *  current one (its scope is open) and apply_gradients sums the gradients over the replicas
   *  first (optim::cross_replica), as TensorFlow's does in a replica context; with the loss
   *  averaged over the global batch (compute_average_loss), the sum is the whole batch's
   *  gradient. At a variable's first step under the strategy every replica must hold the same
   *  value (TensorFlow's variables are mirrored from their creation): where they differ, every
   *  replica raises, the variable then holding the first replica's value. */
  class ReplicaContext {
   public:
    explicit ReplicaContext(const std::shared_ptr<const MirroredStrategy>& strategy);

   private:
    Scope scope_;
    optim::CrossReplicaGuard sum_gradients_;
  };
  [[nodiscard]] std::unique_ptr<ReplicaContext> replica_context() const {
    return std::make_unique<ReplicaContext>(shared_from_this());
  }
  /** tf's strategy.reduce(op, value, axis): "SUM" or "MEAN" of every replica's value; with an
   *  axis, over that axis of each value too (MEAN: over all the replicas' elements along it). */
  Tensor reduce(const std::string& op, const Tensor& value, std::optional<int64_t> axis = std::nullopt) const;
  /** tf's strategy.gather(value, axis): every replica's value joined along axis, in replica
   *  order (their sizes along it may differ; the other dims must agree). */
  Tensor gather(const Tensor& value, int64_t axis) const;
  /** This replica's rows of a global batch (dim 0), as experimental_distribute_dataset splits
   *  each batch: in order, as evenly as they go, the first replicas one row more. */
  Tensor local_part(const Tensor& global_batch) const;

 private:
  explicit MirroredStrategy(distributed::ProcessGroupPtr group) : group_(std::move(group)) {}
  distributed::ProcessGroupPtr group_;
  // The variables mirrored from the first replica so far, held until only this map holds them
  // (so no live variable's address is reused).
  std::shared_ptr<std::unordered_map<const TensorImpl*, Tensor>> mirrored_ =
      std::make_shared<std::unordered_map<const TensorImpl*, Tensor>>();
};

/** The strategy of the innermost open scope on this thread, or null (tf.distribute.has_strategy). */
std::shared_ptr<const MirroredStrategy> current_strategy();

/** tf.nn.compute_average_loss: the per-example losses (times sample_weight) summed and divided
 *  by global_batch_size, by default their count times the replicas of the strategy whose scope
 *  or replica context is open (1 without one). */
Tensor compute_average_loss(const Tensor& per_example_loss, std::optional<int64_t> global_batch_size = std::nullopt,
                            const std::optional<Tensor>& sample_weight = std::nullopt);

}  // namespace ug::train
