// The part of a DataLoader that does not depend on what a batch is: the passes of a batch
// sampler, loaded by worker threads ahead of the consumer. Each batch is loaded under its own
// generator, seeded from (loader seed, epoch, batch index), so random transforms give the
// same batches with any number of workers. Each worker thread knows which it is (worker_info)
// before it loads anything.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "ug/core/random.h"
#include "ug/data/batch_sampler.h"
#include "ug/data/prefetcher.h"
#include "ug/data/worker_info.h"

namespace ug::data {

struct LoaderOptions {
  /** Threads loading batches ahead (0: batches load on the consumer's thread). */
  int num_workers = 0;
  /** Batches each worker may load ahead: the queue holds num_workers * prefetch_factor. */
  int prefetch_factor = 2;
  /** Seeds the batches' generators (and, in DataLoader, the shuffle); none: drawn per pass
   *  from the global generator. */
  std::optional<uint64_t> seed;
  /** Called first on each worker thread with its id (torch's worker_init_fn), worker_info() set. */
  std::function<void(int)> worker_init_fn;
  /** Seconds to wait for a batch from the workers before raising (0: no limit; workers only). */
  double timeout = 0;
};

/** The batches of one pass and the seed their generators derive from. */
struct PassPlan {
  std::vector<std::vector<int64_t>> batches;
  uint64_t seed;
};

/** The next pass of `sampler` at `epoch`. */
PassPlan plan_pass(BatchSampler& sampler, const LoaderOptions& options, int64_t epoch);
/** The seed of batch `index` of a pass whose seed is `pass_seed`. */
uint64_t batch_seed(uint64_t pass_seed, int64_t index);
/** The seed of a pass at `epoch` of a loader seeded with `seed` (or drawn when none). */
uint64_t pass_seed(std::optional<uint64_t> seed, int64_t epoch);
/** Checks the options and returns the queue's capacity. */
int64_t queue_capacity(const LoaderOptions& options);
/** What each of the `workers` threads of a pass seeded `pass_seed` runs first: it records its
 *  worker_info, then calls the options' worker_init_fn. */
std::function<void(int)> worker_start(const LoaderOptions& options, uint64_t pass_seed, int workers);

template <class Batch> class BatchLoader {
 public:
  /** Loads the batch of the samples at `indices`; runs on a worker thread. */
  using Load = std::function<Batch(std::span<const int64_t>)>;
  using Pass = Prefetcher<Batch>;

  BatchLoader(std::shared_ptr<BatchSampler> sampler, Load load, LoaderOptions options)
      : sampler_(std::move(sampler)), load_(std::move(load)), options_(options), capacity_(queue_capacity(options)) {}

  /** The epoch of the next pass; also passed on to the sampler. */
  void set_epoch(int64_t epoch) {
    epoch_ = epoch;
    sampler_->set_epoch(epoch);
  }
  int64_t epoch() const { return epoch_; }

  /** Starts the next pass (the epoch moves on by one). Dropping the pass stops its workers. */
  std::unique_ptr<Pass> begin_pass() {
    auto plan = std::make_shared<const PassPlan>(plan_pass(*sampler_, options_, epoch_++));
    auto produce = [plan, load = load_](int64_t i) -> std::optional<Batch> {
      if (i >= static_cast<int64_t>(plan->batches.size())) return std::nullopt;
      Generator g(batch_seed(plan->seed, i));
      GeneratorScope scope(g);
      return load(plan->batches[static_cast<size_t>(i)]);
    };
    return std::make_unique<Pass>(std::move(produce), options_.num_workers, capacity_,
                                  worker_start(options_, plan->seed, options_.num_workers), options_.timeout);
  }

  int64_t num_batches() const { return sampler_->size(); }
  const std::shared_ptr<BatchSampler>& batch_sampler() const { return sampler_; }
  const LoaderOptions& options() const { return options_; }

 private:
  std::shared_ptr<BatchSampler> sampler_;
  Load load_;
  LoaderOptions options_;
  int64_t capacity_;
  int64_t epoch_ = 0;
};

}  // namespace ug::data
