// Forward mode: while ug::jvp runs, tensors carry tangents, and each op computes its
// output's tangent from its inputs' with the op's forward rule, written next to its vjp.
// Levels (one per active jvp, never reused) let forward mode nest and compose with reverse
// mode and vmap.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::forward {

/** Opens a forward-mode level for its lifetime (ug::jvp holds one). */
class Level {
 public:
  Level();
  ~Level();
  Level(const Level&) = delete;
  Level& operator=(const Level&) = delete;
  int64_t id() const { return id_; }

 private:
  int64_t id_;
};

namespace detail {
extern thread_local int open_levels;
}
/** True while some level is open on this thread: ops skip all forward work otherwise (an
 *  inline check, since every op asks). */
inline bool active() { return detail::open_levels > 0; }

/** Whether t has a tangent at an open level. */
bool has_tangent(const Tensor& t);

/** t's tangent at `level` (undefined when it has none). */
Tensor tangent(const Tensor& t, int64_t level);
void set_tangent(const Tensor& t, int64_t level, const Tensor& tangent);

/** For every open level at which an input has a tangent, sets the floating outputs' tangents
 *  to rule(tangents of the inputs at that level; undefined where an input has none), which
 *  gives one tangent per output (undefined: none). */
void propagate(const std::vector<const Tensor*>& inputs, const std::vector<const Tensor*>& outputs,
               const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& rule);

/** Gives t result's tangents, or none (in-place ops run out of place: t's old tangent goes). */
void copy_tangents(const Tensor& result, const Tensor& t);

}  // namespace ug::forward
