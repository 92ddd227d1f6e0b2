#include "ug/ops/value_checks.h"

#include <algorithm>
#include <limits>

namespace ug::ops {

std::pair<int64_t, int64_t> integer_range(const Tensor& t) {
  return read_every_example(t, [](const Tensor& all) -> std::pair<int64_t, int64_t> {
    // vmap over no example: t has elements, each of none of the examples
    if (all.numel() == 0) return {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    // On the CPU one pass over the words: two reductions and two reads back cost
    // microseconds, which a compiled program's gathers of a small batch paid at every step.
    if (all.device().type != DeviceType::CPU || all.dtype() != DType::Int64 || !all.is_contiguous())
      return {all.min().item<int64_t>(), all.max().item<int64_t>()};
    const int64_t* p = all.data_ptr<int64_t>();
    const auto [lo, hi] = std::minmax_element(p, p + all.numel());
    return {*lo, *hi};
  });
}

}  // namespace ug::ops
