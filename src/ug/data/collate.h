// Samples into a batch, field by field (torch.utils.data.default_collate for tuples of tensors).
#pragma once

#include "ug/data/dataset.h"

namespace ug::data {

/** Stacks field f of every sample along a new dim 0. All samples need the same number of
 *  fields, and each field the same shape (ValueError otherwise). */
Example default_collate(const std::vector<Example>& samples);

}  // namespace ug::data
