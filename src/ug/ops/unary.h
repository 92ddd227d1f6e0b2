// The elementwise unary ops on tensors; each op's name, dtype rule and scalar math are in
// unary_kinds.h, which the backends' kernels read too.
#pragma once

#include "ug/core/tensor.h"
#include "ug/ops/unary_kinds.h"

namespace ug::ops {

/** Applies a unary op: the dtype rule, then the device's kernel. */
Tensor unary(UnaryOp op, const Tensor& x);
/** The same op written into `out` (which may be x itself, for the in-place forms). */
void unary_out(UnaryOp op, const Tensor& x, const Tensor& out);

}  // namespace ug::ops

namespace ug {
// Free functions, as in torch::exp(x).
#define UG_DECLARE_UNARY(Op, method) Tensor method(const Tensor& x);
UG_UNARY_MATH_OPS(UG_DECLARE_UNARY)
UG_UNARY_PREDICATES(UG_DECLARE_UNARY)
#undef UG_DECLARE_UNARY
/** approximate: "none" (exact, with erf) or "tanh". */
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
}  // namespace ug
