#include "ug/data/collate.h"

#include "ug/core/error.h"
#include "ug/ops/join.h"

namespace ug::data {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out = "(";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + ")";
}

}  // namespace

Example default_collate(const std::vector<Example>& samples) {
  if (samples.empty()) fail("[default_collate] expected at least one sample");
  const size_t fields = samples.front().size();
  for (size_t s = 1; s < samples.size(); ++s)
    if (samples[s].names != samples.front().names)
      fail("[default_collate] sample ", s, " of the batch has the fields ", joined(samples[s].names), ", sample 0 has ",
           joined(samples.front().names));
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
  batch.names = samples.front().names;
  return batch;
}

}  // namespace ug::data
