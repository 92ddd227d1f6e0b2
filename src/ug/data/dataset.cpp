#include "ug/data/dataset.h"

#include "ug/core/error.h"
#include "ug/data/collate.h"

namespace ug::data {

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  if (indices.empty()) fail("[Dataset.get_batch] expected at least one index");
  std::vector<Example> samples;
  samples.reserve(indices.size());
  for (int64_t i : indices) samples.push_back(get(i));
  return default_collate(samples);
}

}  // namespace ug::data
