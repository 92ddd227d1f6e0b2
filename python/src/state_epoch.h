// A count of the changes Python makes to what a compiled program assumes of the modules and
// tensors its function reads without taking them as arguments: a module's training mode, its
// plain attributes and children, a tensor's requires_grad. A jitted function reads its guards
// on them again only when the count moved (compiled.py, JitFunction._guards), so that a call
// that hits costs one read of it. The GIL orders the updates.
#pragma once

#include <cstdint>

namespace ugpy {

inline std::uint64_t& state_epoch() {
  static std::uint64_t count = 0;
  return count;
}

inline void touch_state() { ++state_epoch(); }

}  // namespace ugpy
