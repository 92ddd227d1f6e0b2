// Data sets built from tensors or from other data sets (torch.utils.data's TensorDataset,
// Subset, ConcatDataset, StackDataset and random_split).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ug/data/dataset.h"

namespace ug::data {

/** Sample i is (t[i] for t in tensors); all tensors share their first dimension. A batch is
 *  one index_select per tensor: the fast path of the DataLoader. */
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> tensors);
  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  Example get_batch(std::span<const int64_t> indices) const override;
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
  int64_t size_;
};

/** The samples of `dataset` at `indices`, in that order. Batches go through the underlying
 *  data set's get_batch, so a Subset of a TensorDataset keeps the fast path. */
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<Dataset> dataset, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  Example get_batch(std::span<const int64_t> indices) const override;
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  std::vector<int64_t> indices_;
};

/** The data sets one after the other. */
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<std::shared_ptr<Dataset>> datasets);
  int64_t size() const override { return cumulative_sizes_.empty() ? 0 : cumulative_sizes_.back(); }
  Example get(int64_t index) const override;
  /** One get_batch per data set the indices fall in, then the rows put back in order. */
  Example get_batch(std::span<const int64_t> indices) const override;
  const std::vector<std::shared_ptr<Dataset>>& datasets() const { return datasets_; }
  /** Running totals of the sizes, as torch's cumulative_sizes. */
  const std::vector<int64_t>& cumulative_sizes() const { return cumulative_sizes_; }
  /** (data set, index inside it) of a global index. */
  std::pair<size_t, int64_t> locate(int64_t index) const;

 private:
  std::vector<std::shared_ptr<Dataset>> datasets_;
  std::vector<int64_t> cumulative_sizes_;
};

/** Sample i is sample i of every data set, their fields one after the other (torch's
 *  StackDataset, whose samples Python rebuilds as a tuple or dict of the data sets' samples).
 *  With `keys`, one per data set, the fields are named: by the key for a data set of
 *  one-field samples, else "key.field" (the field's name or position). All data sets have
 *  the same size. */
class StackDataset : public Dataset {
 public:
  explicit StackDataset(std::vector<std::shared_ptr<Dataset>> datasets, std::vector<std::string> keys = {});
  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  /** One get_batch per data set. */
  Example get_batch(std::span<const int64_t> indices) const override;
  const std::vector<std::shared_ptr<Dataset>>& datasets() const { return datasets_; }
  /** The data sets' keys; empty when the samples are tuples. */
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  /** The data sets' parts of a sample or batch as one Example. */
  Example stacked(const std::vector<Example>& parts) const;
  std::vector<std::shared_ptr<Dataset>> datasets_;
  std::vector<std::string> keys_;
  int64_t size_;
};

/** Splits `dataset` at random into Subsets of the given lengths, or of the given fractions
 *  when they sum to 1 (the remainder goes one by one to the first splits, like torch). The
 *  split depends on `seed` only; without one it is drawn from the global generator. */
std::vector<std::shared_ptr<Subset>> random_split(const std::shared_ptr<Dataset>& dataset,
                                                  const std::vector<double>& lengths,
                                                  std::optional<uint64_t> seed = std::nullopt);

/** Raises IndexError naming `op`, the index and the size unless 0 <= index < size. */
void check_index(const char* op, int64_t index, int64_t size);

}  // namespace ug::data
