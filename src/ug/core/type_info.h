// torch.finfo and torch.iinfo: the limits of each dtype, for masks (finfo(dtype).min), epsilons
// and clamps written once for every dtype.
#pragma once

#include <cstdint>

#include "ug/core/dtype.h"

namespace ug {

/** A floating dtype's limits, as torch.finfo gives them. */
struct FloatInfo {
  int bits;
  double eps;         // the gap between 1 and the next value up
  double max, min;    // the largest finite value and its negative
  double tiny;        // the smallest positive normal value (smallest_normal)
  double resolution;  // 10 ** -(decimal digits)
};

/** An integer dtype's limits, as torch.iinfo gives them. */
struct IntInfo {
  int bits;
  int64_t min;
  uint64_t max;
};

/** Throws TypeError for a dtype that is not floating. */
FloatInfo finfo(DType t);
/** Throws TypeError for a dtype that is not an integer one (bool included, as torch). */
IntInfo iinfo(DType t);

}  // namespace ug
