// What the backends' scatter kernel is told, below both ops and backends.
#pragma once

#include <cstdint>

namespace ug::ops {

/** How scatter combines src with what out holds at an index: Assign overwrites (the last
 *  writer wins), the others reduce into it (torch's scatter_reduce: Amax and Amin keep NaN). */
enum class ScatterOp : uint8_t { Assign, Sum, Prod, Amax, Amin };

}  // namespace ug::ops
