#include "ug/data/datasets.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ug/core/error.h"
#include "ug/data/seeding.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"

namespace ug::data {

namespace {

Tensor index_tensor(std::span<const int64_t> indices) {
  Tensor t = empty({static_cast<int64_t>(indices.size())}, {.dtype = DType::Int64});
  std::copy(indices.begin(), indices.end(), t.data_ptr<int64_t>());
  return t;
}

}  // namespace

void check_index(const char* op, int64_t index, int64_t size) {
  if (index < 0 || index >= size)
    fail<IndexError>("[", op, "] index ", index, " is out of range for a data set of size ", size);
}

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  if (tensors_.empty()) fail("[TensorDataset] expected at least one tensor");
  for (const Tensor& t : tensors_)
    if (!t.defined() || t.dim() == 0) fail("[TensorDataset] every tensor needs a first dimension (got a scalar)");
  size_ = tensors_[0].size(0);
  for (size_t i = 1; i < tensors_.size(); ++i)
    if (tensors_[i].size(0) != size_) {
      std::ostringstream sizes;
      for (size_t j = 0; j < tensors_.size(); ++j) sizes << (j ? ", " : "") << tensors_[j].size(0);
      fail("[TensorDataset] size mismatch between tensors: their first dimensions are ", sizes.str());
    }
}

Example TensorDataset::get(int64_t index) const {
  check_index("TensorDataset", index, size_);
  Example out;
  out.reserve(tensors_.size());
  for (const Tensor& t : tensors_) out.push_back(t.select(0, index));
  return out;
}

Example TensorDataset::get_batch(std::span<const int64_t> indices) const {
  for (int64_t i : indices) check_index("TensorDataset", i, size_);
  const Tensor index = index_tensor(indices);
  Example out;
  out.reserve(tensors_.size());
  for (const Tensor& t : tensors_) out.push_back(t.index_select(0, index));
  return out;
}

Subset::Subset(std::shared_ptr<Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  if (!dataset_) fail("[Subset] expected a data set, got none");
  const int64_t n = dataset_->size();
  for (int64_t i : indices_) check_index("Subset", i, n);
}

Example Subset::get(int64_t index) const {
  check_index("Subset", index, size());
  return dataset_->get(indices_[static_cast<size_t>(index)]);
}

Example Subset::get_batch(std::span<const int64_t> indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) {
    check_index("Subset", i, size());
    mapped.push_back(indices_[static_cast<size_t>(i)]);
  }
  return dataset_->get_batch(mapped);
}

ConcatDataset::ConcatDataset(std::vector<std::shared_ptr<Dataset>> datasets) : datasets_(std::move(datasets)) {
  if (datasets_.empty()) fail("[ConcatDataset] datasets should not be an empty iterable");
  int64_t total = 0;
  for (const auto& d : datasets_) {
    if (!d) fail("[ConcatDataset] expected data sets, got none");
    total += d->size();
    cumulative_sizes_.push_back(total);
  }
}

std::pair<size_t, int64_t> ConcatDataset::locate(int64_t index) const {
  check_index("ConcatDataset", index, size());
  const size_t d = static_cast<size_t>(std::upper_bound(cumulative_sizes_.begin(), cumulative_sizes_.end(), index) -
                                       cumulative_sizes_.begin());
  return {d, d == 0 ? index : index - cumulative_sizes_[d - 1]};
}

Example ConcatDataset::get(int64_t index) const {
  const auto [d, local] = locate(index);
  return datasets_[d]->get(local);
}

Example ConcatDataset::get_batch(std::span<const int64_t> indices) const {
  if (indices.empty()) fail("[ConcatDataset.get_batch] expected at least one index");
  std::vector<std::vector<int64_t>> local(datasets_.size());
  std::vector<std::vector<int64_t>> positions(datasets_.size());
  for (size_t p = 0; p < indices.size(); ++p) {
    const auto [d, i] = locate(indices[p]);
    local[d].push_back(i);
    positions[d].push_back(static_cast<int64_t>(p));
  }
  std::vector<Example> parts;
  std::vector<int64_t> order;  // order[k]: the batch position of row k of the concatenation
  for (size_t d = 0; d < datasets_.size(); ++d) {
    if (local[d].empty()) continue;
    if (local[d].size() == indices.size()) return datasets_[d]->get_batch(local[d]);
    parts.push_back(datasets_[d]->get_batch(local[d]));
    order.insert(order.end(), positions[d].begin(), positions[d].end());
  }
  std::vector<int64_t> inverse(order.size());
  for (size_t k = 0; k < order.size(); ++k) inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
  const Tensor gather = index_tensor(inverse);
  Example out;
  for (size_t f = 0; f < parts[0].size(); ++f) {
    std::vector<Tensor> column;
    for (const Example& part : parts) {
      if (part.size() != parts[0].size())
        fail("[ConcatDataset.get_batch] the data sets' samples have different numbers of fields (", parts[0].size(),
             " and ", part.size(), ")");
      column.push_back(part[f]);
    }
    out.push_back(cat(column, 0).index_select(0, gather));
  }
  return out;
}

StackDataset::StackDataset(std::vector<std::shared_ptr<Dataset>> datasets, std::vector<std::string> keys)
    : datasets_(std::move(datasets)), keys_(std::move(keys)) {
  if (datasets_.empty()) fail("[StackDataset] at least one dataset should be passed");
  if (!keys_.empty() && keys_.size() != datasets_.size())
    fail("[StackDataset] got ", keys_.size(), " keys for ", datasets_.size(), " data sets");
  auto name = [&](size_t d) { return keys_.empty() ? "dataset " + std::to_string(d) : "'" + keys_[d] + "'"; };
  for (size_t d = 0; d < datasets_.size(); ++d) {
    if (!datasets_[d]) fail("[StackDataset] expected data sets, got none");
    if (datasets_[d]->size() != datasets_[0]->size())
      fail("[StackDataset] size mismatch between datasets: ", name(0), " has ", datasets_[0]->size(), " samples, ",
           name(d), " has ", datasets_[d]->size());
  }
  size_ = datasets_[0]->size();
}

Example StackDataset::stacked(const std::vector<Example>& parts) const {
  Example out;
  for (size_t d = 0; d < parts.size(); ++d) {
    out.insert(out.end(), parts[d].begin(), parts[d].end());
    if (keys_.empty()) continue;
    if (parts[d].size() == 1 && parts[d].names.empty()) out.names.push_back(keys_[d]);
    else
      for (size_t f = 0; f < parts[d].size(); ++f)
        out.names.push_back(keys_[d] + "." + (parts[d].names.empty() ? std::to_string(f) : parts[d].names[f]));
  }
  return out;
}

Example StackDataset::get(int64_t index) const {
  check_index("StackDataset", index, size_);
  std::vector<Example> parts;
  for (const auto& d : datasets_) parts.push_back(d->get(index));
  return stacked(parts);
}

Example StackDataset::get_batch(std::span<const int64_t> indices) const {
  for (int64_t i : indices) check_index("StackDataset", i, size_);
  std::vector<Example> parts;
  for (const auto& d : datasets_) parts.push_back(d->get_batch(indices));
  return stacked(parts);
}

std::vector<std::shared_ptr<Subset>> random_split(const std::shared_ptr<Dataset>& dataset,
                                                  const std::vector<double>& lengths, std::optional<uint64_t> seed) {
  if (!dataset) fail("[random_split] expected a data set, got none");
  const int64_t n = dataset->size();
  const double total = std::accumulate(lengths.begin(), lengths.end(), 0.0);
  std::vector<int64_t> sizes;
  if (std::abs(total - 1.0) <= 1e-9 && total <= 1.0) {
    for (double f : lengths) {
      if (f < 0 || f > 1) fail("[random_split] fraction ", f, " is not between 0 and 1");
      sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(n) * f)));
    }
    const int64_t remainder = n - std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
    for (int64_t i = 0; i < remainder; ++i) ++sizes[static_cast<size_t>(i) % sizes.size()];
  } else {
    for (double l : lengths) {
      if (l < 0 || l != std::floor(l))
        fail("[random_split] lengths must be non-negative integers or fractions summing to 1, got ", l);
      sizes.push_back(static_cast<int64_t>(l));
    }
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != n)
    fail("[random_split] sum of input lengths (", total, ") does not equal the length of the input dataset (", n, ")");
  const std::vector<int64_t> order = permutation(n, seed ? *seed : draw_seed());
  std::vector<std::shared_ptr<Subset>> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(
        std::make_shared<Subset>(dataset, std::vector<int64_t>(order.begin() + start, order.begin() + start + s)));
    start += s;
  }
  return out;
}

}  // namespace ug::data
