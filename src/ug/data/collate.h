// Samples into a batch, field by field (torch.utils.data.default_collate for tuples of tensors).
#pragma once

#include "ug/data/dataset.h"

namespace ug::data {

/** Stacks field f of every sample along a new dim 0, keeping the fields' names (a dict of
 *  batched tensors, as torch collates dicts). All samples need the same number of fields and
 *  the same names, and each field the same shape (ValueError otherwise). */
Example default_collate(const std::vector<Example>& samples);

}  // namespace ug::data
