// One fork-join pool for every kernel. Work is split into chunks whose boundaries depend
// only on the problem size, never on the thread count, so results are reproducible.
#pragma once

#include <cstdint>
#include <functional>

namespace ug {

/** Sets the number of threads kernels use, matrix products included (OpenBLAS itself runs
 *  single-threaded inside the pool's tasks). */
void set_num_threads(int n);
int get_num_threads();

/** Calls fn(begin, end) over [0, n) in pieces of at least `grain` items, in parallel when
 *  worthwhile. Nested calls run inline. fn must not throw across threads: exceptions are
 *  caught and the first is rethrown on the calling thread. */
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace ug
