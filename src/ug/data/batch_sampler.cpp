#include "ug/data/batch_sampler.h"

#include "ug/core/error.h"

namespace ug::data {

void check_batch_size(int64_t batch_size) {
  if (batch_size <= 0)
    fail("[BatchSampler] batch_size should be a positive integer value, but got batch_size=", batch_size);
}

BatchSampler::BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  if (!sampler_) fail("[BatchSampler] expected a sampler, got none");
  check_batch_size(batch_size);
}

int64_t BatchSampler::size() const {
  const int64_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<std::vector<int64_t>> BatchSampler::batches() {
  const std::vector<int64_t> indices = sampler_->indices();
  std::vector<std::vector<int64_t>> out;
  for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(batch_size_)) {
    const size_t end = std::min(indices.size(), start + static_cast<size_t>(batch_size_));
    if (drop_last_ && end - start < static_cast<size_t>(batch_size_)) break;
    out.emplace_back(indices.begin() + static_cast<std::ptrdiff_t>(start),
                     indices.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

void BatchSampler::set_epoch(int64_t epoch) { sampler_->set_epoch(epoch); }

}  // namespace ug::data
