// The reduction and scan kernels backends provide; sums, means, norms and the rest are
// composed from them in ops/reduce.cpp.
#pragma once

#include <cstdint>

namespace ug::ops {

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, ArgMax, ArgMin, All, Any };
enum class ScanOp : uint8_t { CumSum, CumProd };

}  // namespace ug::ops
