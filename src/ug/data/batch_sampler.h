// BatchSampler: a sampler's indices grouped into batches (torch.utils.data.BatchSampler).
#pragma once

#include <memory>
#include <vector>

#include "ug/data/sampler.h"

namespace ug::data {

/** A pass as batches of indices. Subclasses without a Sampler (Python iterables of batches)
 *  override batches(), size() and set_epoch(). */
class BatchSampler {
 public:
  BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last);
  virtual ~BatchSampler() = default;
  /** Batches per pass. */
  virtual int64_t size() const;
  /** The batches of the next pass. */
  virtual std::vector<std::vector<int64_t>> batches();
  /** Passes the epoch on to the sampler. */
  virtual void set_epoch(int64_t epoch);
  const std::shared_ptr<Sampler>& sampler() const { return sampler_; }
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return drop_last_; }

 protected:
  BatchSampler() = default;

 private:
  std::shared_ptr<Sampler> sampler_;
  int64_t batch_size_ = 1;
  bool drop_last_ = false;
};

/** Raises ValueError unless batch_size > 0 (torch's message). */
void check_batch_size(int64_t batch_size);

}  // namespace ug::data
