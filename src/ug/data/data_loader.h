// DataLoader: a map-style data set read in batches (torch.utils.data.DataLoader), as a
// BatchSource for the training loop.
//
// Workers are threads, not processes: everything stays in one process, so nothing is
// pickled or copied between processes, C++ data sets load batches in parallel without any
// interpreter lock, and Python data sets run in the workers under the GIL (time spent in
// I/O, sleeping or unigrad's kernels releases it).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "ug/data/batch_loader.h"
#include "ug/data/dataset.h"

namespace ug::data {

/** Turns samples into a batch; the default stacks them field by field (Dataset::get_batch). */
using Collate = std::function<Example(std::vector<Example>)>;

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  /** Custom order of the samples (excludes shuffle). */
  std::shared_ptr<Sampler> sampler;
  /** Custom batches (excludes batch_size, shuffle, sampler and drop_last). */
  std::shared_ptr<BatchSampler> batch_sampler;
  int num_workers = 0;
  Collate collate_fn;
  /** Accepted for torch compatibility; tensors live in CPU memory already, so it does nothing. */
  bool pin_memory = false;
  bool drop_last = false;
  int prefetch_factor = 2;
  /** Accepted for torch compatibility: worker threads are cheap to start for each pass. */
  bool persistent_workers = false;
  /** Seeds the shuffle and the batches' generators; none: drawn per pass from the global one. */
  std::optional<uint64_t> seed;
  /** Called first on each worker thread with its id; worker_info() tells it more. */
  std::function<void(int)> worker_init_fn;
  /** Seconds next() waits for a batch from the workers before it throws (0: no limit). */
  double timeout = 0;
};

/** The batch sampler the options describe for a data set of `size` samples (checks that
 *  the options do not conflict, with torch's messages). */
std::shared_ptr<BatchSampler> make_batch_sampler(int64_t size, const DataLoaderOptions& options);

class DataLoader : public BatchSource {
 public:
  explicit DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  ~DataLoader() override;

  /** Starts pass `epoch` (the shuffle and the batches' generators depend on it). */
  void start_epoch(int64_t epoch) override;
  /** The next batch of the current pass; nullopt at its end. Without a start_epoch, the
   *  first call starts the pass of the next epoch. */
  std::optional<Example> next() override;
  int64_t num_batches() const override { return core_.num_batches(); }

  /** The epoch of the next pass that starts without start_epoch; passed on to the sampler. */
  void set_epoch(int64_t epoch) { core_.set_epoch(epoch); }
  /** Ends the current pass early, stopping its workers. */
  void stop();
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  BatchLoader<Example> core_;
  std::unique_ptr<BatchLoader<Example>::Pass> pass_;
};

}  // namespace ug::data
