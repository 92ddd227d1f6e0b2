// The batches of in-memory tensors that fit(x, y) and predict(x) read: samples along dim 0,
// cut into batches of batch_size (the last one smaller), in a seeded order that is reshuffled
// each epoch. Kept minimal: data::TensorDataset with a DataLoader will do the same job.
#pragma once

#include <cstdint>
#include <vector>

#include "ug/data/dataset.h"

namespace ug::train {

class TensorBatches : public data::BatchSource {
 public:
  /** fields: x, y, ... with the same number of samples; `who` names the caller in errors. */
  TensorBatches(std::vector<Tensor> fields, int64_t batch_size, bool shuffle = false, uint64_t seed = 0,
                const char* who = "fit");
  void start_epoch(int64_t epoch) override;
  std::optional<data::Example> next() override;
  int64_t num_batches() const override;
  int64_t num_samples() const { return n_; }

 private:
  std::vector<Tensor> fields_;
  int64_t n_, batch_size_;
  bool shuffle_;
  uint64_t seed_;
  Tensor order_;  // this epoch's permutation (when shuffling)
  int64_t pos_ = 0;
};

}  // namespace ug::train
