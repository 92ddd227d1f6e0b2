// Checks of an input's values (an index in range, a probability in [0, 1], a divisor not
// zero) that must hold in every example of a vmap and that a trace makes once, on the trace's
// values (jax.jit checks none). Written as `ops::any_true(index < 0)`, such a check batches:
// it reads the flags of every example at once from their physical tensor, where reading one
// example's value (item()) has no batching rule and made vmap call the function once per example.
#pragma once

#include <cstdint>
#include <utility>

#include "ug/core/batching.h"
#include "ug/core/value_read.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/no_capture.h"

namespace ug::ops {

/** t's values in every example: its physical tensor below every vmap level (t unbatched). */
inline Tensor every_example(Tensor t) {
  while (batching::level(t)) t = Tensor(t.impl().batch()->physical);
  return t;
}

/** read(every_example(t)), made outside any trace and gradient recording, allowed to read
 *  values back (item()). */
template <class Read> decltype(auto) read_every_example(const Tensor& t, Read&& read) {
  graph::NoCapture off;
  NoGradGuard no_grad;
  ValueReadScope check;
  return read(every_example(t));
}

/** Whether any element of the bool tensor `flags` is true, in any example. */
inline bool any_true(const Tensor& flags) {
  return read_every_example(flags, [](const Tensor& all) { return all.any().item<bool>(); });
}

/** Whether every element of the bool tensor `flags` is true, in every example. */
inline bool all_true(const Tensor& flags) {
  return read_every_example(flags, [](const Tensor& all) { return all.all().item<bool>(); });
}

/** The smallest and largest entries of an integer tensor, over every example; for a tensor
 *  with no values there (a vmap over no example), the empty range {INT64_MAX, INT64_MIN},
 *  which every bounds check passes. */
std::pair<int64_t, int64_t> integer_range(const Tensor& t);

}  // namespace ug::ops
