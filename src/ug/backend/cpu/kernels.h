// CPU kernels that are compiled once per instruction set (generic x86-64, AVX2+FMA and
// AVX-512): the same source, vectorised by the compiler for each; cpu_backend.cpp picks at
// start-up.
#pragma once

#include <cstdint>

#include "ug/core/random.h"
#include "ug/core/tensor.h"
#include "ug/ops/binary_kinds.h"
#include "ug/ops/reduce_kinds.h"
#include "ug/ops/unary_kinds.h"

#define UG_CPU_KERNEL_DECLS                                                            \
  void copy(const Tensor& src, const Tensor& dst);                                     \
  void fill(const Tensor& dst, const Scalar& value);                                   \
  void unary(ops::UnaryOp op, const Tensor& x, const Tensor& out);                     \
  void binary(ops::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);  \
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out); \
  void reduce(ops::ReduceOp op, const Tensor& x, int64_t outer, int64_t reduced, int64_t inner, const Tensor& out);

namespace ug::cpu {
namespace generic {
UG_CPU_KERNEL_DECLS
}
namespace avx2 {
UG_CPU_KERNEL_DECLS
}
namespace avx512 {
UG_CPU_KERNEL_DECLS
}
}  // namespace ug::cpu
