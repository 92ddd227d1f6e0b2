// IDX files (MNIST, Fashion-MNIST): a magic number giving the element type and rank, the
// sizes as big-endian 32-bit integers, then the data. Plain or gzip-compressed.
#pragma once

#include <string>

#include "ug/core/tensor.h"

namespace ug::data {

/** The tensor an IDX file holds: uint8 (also for the signed byte type, widened to int32),
 *  int32 for 16- and 32-bit integers, float32, float64. A malformed, truncated or oversized
 *  file raises ug::ValueError naming the file and the problem. */
Tensor read_idx(const std::string& path);

}  // namespace ug::data
