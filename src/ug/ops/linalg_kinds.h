// What the dense linear-algebra kernels report back to the ops in ops/linalg_solvers.cpp.
#pragma once

#include <cstdint>

namespace ug::ops {

/** The first batch entry whose factorization failed and LAPACK's info for it (which pivot,
 *  leading minor or eigenvalue failed, 1-based); batch < 0 when every entry succeeded. */
struct LinalgStatus {
  int64_t batch = -1;
  int64_t info = 0;
  bool failed() const { return batch >= 0; }
};

}  // namespace ug::ops
