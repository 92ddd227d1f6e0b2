#include "ug/data/collate.h"

#include "ug/core/error.h"
#include "ug/ops/join.h"

namespace ug::data {

Example default_collate(const std::vector<Example>& samples) {
  if (samples.empty()) fail("[default_collate] expected at least one sample");
  const size_t fields = samples.front().size();
  Example batch;
  batch.reserve(fields);
  std::vector<Tensor> column(samples.size());
  for (size_t f = 0; f < fields; ++f) {
    for (size_t s = 0; s < samples.size(); ++s) {
      if (samples[s].size() != fields)
        fail("[default_collate] sample ", s, " of the batch has ", samples[s].size(), " fields, sample 0 has ", fields);
      column[s] = samples[s][f];
    }
    batch.push_back(stack(column, 0));
  }
  return batch;
}

}  // namespace ug::data
