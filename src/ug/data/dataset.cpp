#include "ug/data/dataset.h"

#include "ug/core/error.h"
#include "ug/ops/join.h"

namespace ug::data {

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  if (indices.empty()) fail("[Dataset.get_batch] expected at least one index");
  std::vector<Example> samples;
  samples.reserve(indices.size());
  for (int64_t i : indices) samples.push_back(get(i));
  const size_t fields = samples.front().size();
  Example batch;
  batch.reserve(fields);
  std::vector<Tensor> column(samples.size());
  for (size_t f = 0; f < fields; ++f) {
    for (size_t s = 0; s < samples.size(); ++s) {
      if (samples[s].size() != fields)
        fail("[Dataset.get_batch] sample ", indices[s], " has ", samples[s].size(),
             " fields, sample ", indices[0], " has ", fields);
      column[s] = samples[s][f];
    }
    batch.push_back(stack(column, 0));
  }
  return batch;
}

}  // namespace ug::data
