// Batched tensors for vmap: a tensor whose impl carries BatchInfo stands for one example of
// its physical tensor (batch dim first). Ops check for them and apply their batching rule:
// run on the physical tensor with dims shifted by one, and wrap the result.
#pragma once

#include <initializer_list>

#include "ug/core/error.h"
#include "ug/core/tensor.h"

namespace ug {

/** Raised by ops without a batching rule; vmap catches it and maps example by example. */
struct NoBatchingRule : RuntimeError {
  using RuntimeError::RuntimeError;
};

namespace batching {

inline int level(const Tensor& t) {
  const BatchInfo* b = t.defined() ? t.impl().batch() : nullptr;
  return b ? b->level : 0;
}

/** The highest vmap level among the inputs (0: none is batched). */
inline int max_level(std::initializer_list<const Tensor*> ts) {
  int l = 0;
  for (const Tensor* t : ts) l = std::max(l, level(*t));
  return l;
}

/** t's physical tensor at `lvl` (batch dim 0); an unbatched t at that level is returned
 *  as is, to broadcast against the batch. */
inline Tensor physical(const Tensor& t, int lvl) {
  const BatchInfo* b = t.impl().batch();
  return b && b->level == lvl ? Tensor(b->physical) : t;
}

/** The batched view of `phys` (batch dim 0) at level `lvl`. */
Tensor wrap(const Tensor& phys, int lvl);

/** A new handle on t (for detach and saved tensors) that keeps t's batch. */
Tensor shallow_copy(const Tensor& t);

}  // namespace batching
}  // namespace ug
