// Working memory for CPU kernels, from the caching allocator: a freed block of the same size
// is handed back at once, so a kernel called in a loop touches no fresh pages.
#pragma once

#include <algorithm>
#include <type_traits>

#include "ug/core/tensor.h"

namespace ug::cpu {

/** A buffer of T grown on demand and never zeroed. */
template <class T> class Scratch {
 public:
  T* get(int64_t n) {
    constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
    if (!block_.defined() || block_.numel() < n)
      block_ = empty({std::max<int64_t>(n, 1)}, {.dtype = dtype, .device = Device()});
    return static_cast<T*>(block_.raw_data());
  }

 private:
  Tensor block_;
};

}  // namespace ug::cpu
