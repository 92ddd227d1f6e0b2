// Batched tensors for vmap: a tensor whose impl carries BatchInfo stands for one example of
// its physical tensor (batch dim first). Ops check for them and apply their batching rule:
// run on the physical tensor with dims shifted by one, and wrap the result.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "ug/core/error.h"
#include "ug/core/tensor.h"

namespace ug {

/** Raised by ops without a batching rule; vmap catches it and maps example by example. */
struct NoBatchingRule : RuntimeError {
  using RuntimeError::RuntimeError;
};

/** What a draw from the global generator does inside a vmap (torch.func.vmap's randomness):
 *  raise, draw once for every example, or draw for each example apart. Keyed draws
 *  (ug::random::normal(key, ...)) follow their key whatever this says. */
enum class Randomness { Error, Same, Different };

namespace batching {

/** One vmap open on this thread: its level (0 for vmap's example-by-example fallback, which
 *  batches nothing), its size and its randomness. */
struct VmapFrame {
  int level;
  int64_t size;
  Randomness randomness;
};

/** The vmaps open on this thread, outermost first. */
const std::vector<VmapFrame>& open_vmaps();

/** Opens a vmap for its lifetime: a new batch level, or (batched = false) the frame of the
 *  example-by-example fallback. */
class VmapScope {
 public:
  VmapScope(int64_t size, Randomness randomness, bool batched = true);
  ~VmapScope();
  VmapScope(const VmapScope&) = delete;
  VmapScope& operator=(const VmapScope&) = delete;
  int level() const { return level_; }

 private:
  int level_;
};

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
