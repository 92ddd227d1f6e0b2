#include "ug/train/tensor_batches.h"

#include "ug/core/error.h"
#include "ug/ops/random.h"

namespace ug::train {

TensorBatches::TensorBatches(std::vector<Tensor> fields, int64_t batch_size, bool shuffle, uint64_t seed,
                             const char* who)
    : fields_(std::move(fields)), batch_size_(batch_size), shuffle_(shuffle), seed_(seed) {
  if (fields_.empty()) fail<ValueError>("[", who, "] no data given");
  if (batch_size_ < 1) fail<ValueError>("[", who, "] batch_size must be at least 1, got ", batch_size_);
  for (const Tensor& f : fields_)
    if (f.dim() == 0) fail<ValueError>("[", who, "] the data must have a sample dim, got a scalar tensor");
  n_ = fields_[0].size(0);
  for (size_t i = 1; i < fields_.size(); ++i)
    if (fields_[i].size(0) != n_)
      fail<ValueError>("[", who, "] x and y must have the same number of samples, got ", n_, " and ",
                       fields_[i].size(0), " (shapes ", fields_[0].shape(), " and ", fields_[i].shape(), ")");
  start_epoch(0);
}

void TensorBatches::start_epoch(int64_t epoch) {
  pos_ = 0;
  // The order depends on (seed, epoch) only: a run resumed at epoch k sees the same batches.
  if (shuffle_) order_ = random::permutation(random::fold_in(random::key(seed_), static_cast<uint64_t>(epoch)), n_);
}

std::optional<data::Example> TensorBatches::next() {
  if (pos_ >= n_) return std::nullopt;
  const int64_t len = std::min(batch_size_, n_ - pos_);
  data::Example batch;
  batch.reserve(fields_.size());
  if (shuffle_) {
    Tensor idx = order_.narrow(0, pos_, len);
    for (const Tensor& f : fields_) batch.push_back(f.index_select(0, idx));
  } else {
    for (const Tensor& f : fields_) batch.push_back(f.narrow(0, pos_, len));
  }
  pos_ += len;
  return batch;
}

int64_t TensorBatches::num_batches() const { return (n_ + batch_size_ - 1) / batch_size_; }

}  // namespace ug::train
