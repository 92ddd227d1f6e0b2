// The elementwise binary ops on tensors; each op's name, dtype rule and scalar math are in
// binary_kinds.h, which the backends' kernels read too.
#pragma once

#include "ug/core/tensor.h"
#include "ug/ops/binary_kinds.h"

namespace ug::ops {

/** Applies a binary op: promotion, broadcasting, then the device's kernel. */
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor binary(BinaryOp op, const Tensor& a, Scalar b);
Tensor binary(BinaryOp op, Scalar a, const Tensor& b);
/** The in-place form: a op= b; the result must fit a's dtype and shape. */
void binary_inplace(BinaryOp op, const Tensor& a, const Tensor& b);
void binary_inplace(BinaryOp op, const Tensor& a, Scalar b);
/** The dtype PyTorch gives `a op b` for a tensor and a Python number. */
DType result_type(const Tensor& a, const Scalar& b);
DType result_type(const Tensor& a, const Tensor& b);

}  // namespace ug::ops

namespace ug {
/** torch.result_type: the dtype of an arithmetic op of a and b. */
using ops::result_type;
// Free functions and operators, as in torch::.
#define UG_DECLARE_BINARY_FN(Op, fn)           \
  Tensor fn(const Tensor& a, const Tensor& b); \
  Tensor fn(const Tensor& a, Scalar b);        \
  Tensor fn(Scalar a, const Tensor& b);
UG_BINARY_PUBLIC(UG_DECLARE_BINARY_FN)
#undef UG_DECLARE_BINARY_FN

#define UG_DECLARE_OPERATOR(sym, fn)                                                \
  inline Tensor operator sym(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  inline Tensor operator sym(const Tensor& a, Scalar b) { return fn(a, b); }        \
  inline Tensor operator sym(Scalar a, const Tensor& b) { return fn(a, b); }
UG_DECLARE_OPERATOR(+, add)
UG_DECLARE_OPERATOR(-, sub)
UG_DECLARE_OPERATOR(*, mul)
UG_DECLARE_OPERATOR(/, div)
UG_DECLARE_OPERATOR(%, remainder)
UG_DECLARE_OPERATOR(==, eq)
UG_DECLARE_OPERATOR(!=, ne)
UG_DECLARE_OPERATOR(<, lt)
UG_DECLARE_OPERATOR(<=, le)
UG_DECLARE_OPERATOR(>, gt)
UG_DECLARE_OPERATOR(>=, ge)
UG_DECLARE_OPERATOR(&, bitwise_and)
UG_DECLARE_OPERATOR(|, bitwise_or)
UG_DECLARE_OPERATOR(^, bitwise_xor)
#undef UG_DECLARE_OPERATOR
inline Tensor operator-(const Tensor& a) { return a.neg(); }
inline Tensor operator~(const Tensor& a) { return a.logical_not(); }
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
inline Tensor& operator+=(Tensor& a, Scalar b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, Scalar b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, Scalar b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, Scalar b) { return a.div_(b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, Scalar a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight);
/** torch's add and sub with alpha: a + alpha * b and a - alpha * b, rounded once on 16-bit
 *  operands; add_ and sub_ write the result into a. */
Tensor add(const Tensor& a, const Tensor& b, Scalar alpha);
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha);
Tensor& add_(Tensor& a, const Tensor& b, Scalar alpha);
Tensor& sub_(Tensor& a, const Tensor& b, Scalar alpha);
/** |a - b| <= atol + rtol * |b| elementwise (torch.isclose). */
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/** Same shape and the same values (torch.equal). */
bool equal(const Tensor& a, const Tensor& b);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);

}  // namespace ug
