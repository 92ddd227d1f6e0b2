// How many windows a sliding pooling fits along one dim, shared by the poolings of every rank.
#pragma once

#include <cstdint>

namespace ug {

/** As torch: with ceil_mode, a last window that would start in the right padding is dropped. */
inline int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

}  // namespace ug
