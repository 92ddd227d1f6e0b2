#include "ug/data/dataset.h"

#include "ug/core/error.h"
#include "ug/data/collate.h"

namespace ug::data {

Example::Example(std::vector<Tensor> fields, std::vector<std::string> field_names)
    : std::vector<Tensor>(std::move(fields)), names(std::move(field_names)) {
  if (names.size() != size())
    fail("[Example] ", size(), " field", size() == 1 ? "" : "s", " but ", names.size(), " name",
         names.size() == 1 ? "" : "s");
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (names[i] == names[j]) fail("[Example] the field name '", names[i], "' is given twice");
}

const Tensor& Example::field(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return (*this)[i];
  fail<IndexError>("[Example] no field '", name, "'", names.empty() ? " (the fields are not named)" : "");
}

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  if (indices.empty()) fail("[Dataset.get_batch] expected at least one index");
  std::vector<Example> samples;
  samples.reserve(indices.size());
  for (int64_t i : indices) samples.push_back(get(i));
  return default_collate(samples);
}

}  // namespace ug::data
