// Unary ops: dtype rule, output allocation, kernel call; the Tensor methods and free
// functions are generated from the op list in unary.h.
#include "ug/ops/unary.h"

#include "ug/backend/backend.h"

namespace ug::ops {

namespace {

struct UnaryInfo {
  const char* name;
  UnaryRule rule;
};

constexpr UnaryInfo kUnaryInfo[] = {
#define UG_INFO(Op) {Op::name, Op::rule},
    UG_UNARY_OPS(UG_INFO)
#undef UG_INFO
};

const UnaryInfo& info(UnaryOp op) { return kUnaryInfo[static_cast<int>(op)]; }

DType result_dtype(UnaryOp op, DType in) {
  const UnaryInfo& i = info(op);
  switch (i.rule) {
    case UnaryRule::Same:
      if (in == DType::Bool) fail<TypeError>("[", i.name, "] not supported for bool tensors");
      return in;
    case UnaryRule::SameOrBool: return in;
    case UnaryRule::Integral: return in == DType::Bool ? DType::Int64 : in;
    case UnaryRule::Floating: return to_floating(in);
    case UnaryRule::Predicate: return DType::Bool;
  }
  return in;
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x) {
  DType out_dtype = result_dtype(op, x.dtype());
  const UnaryRule rule = info(op).rule;
  Tensor in = rule == UnaryRule::Floating || rule == UnaryRule::Integral ? x.to(out_dtype) : x;
  Tensor out = empty(x.shape(), {.dtype = out_dtype, .device = x.device()});
  backend_for(x.device()).unary(op, in, out);
  return out;
}

void unary_out(UnaryOp op, const Tensor& x, const Tensor& out) {
  DType want = result_dtype(op, x.dtype());
  if (want != out.dtype() || info(op).rule == UnaryRule::Predicate) {
    Tensor result = unary(op, x);
    if (!is_floating(out.dtype()) && is_floating(result.dtype()))
      fail<TypeError>("[", info(op).name, "_] result type ", result.dtype(),
                      " can't be cast to the desired output type ", out.dtype());
    Tensor(out).copy_(result);
    return;
  }
  backend_for(x.device()).unary(op, x, out);
  out.bump_version();
}

}  // namespace ug::ops

namespace ug {

#define UG_DEFINE_UNARY(name, Op)                                                  \
  Tensor name(const Tensor& x) { return ops::unary(ops::UnaryOp::Op, x); }        \
  Tensor Tensor::name() const { return ops::unary(ops::UnaryOp::Op, *this); }     \
  Tensor& Tensor::name##_() {                                                      \
    ops::unary_out(ops::UnaryOp::Op, *this, *this);                                \
    return *this;                                                                  \
  }
UG_DEFINE_UNARY(neg, Neg)
UG_DEFINE_UNARY(abs, Abs)
UG_DEFINE_UNARY(sign, Sign)
UG_DEFINE_UNARY(square, Square)
UG_DEFINE_UNARY(relu, Relu)
UG_DEFINE_UNARY(floor, Floor)
UG_DEFINE_UNARY(ceil, Ceil)
UG_DEFINE_UNARY(round, Round)
UG_DEFINE_UNARY(trunc, Trunc)
UG_DEFINE_UNARY(exp, Exp)
UG_DEFINE_UNARY(exp2, Exp2)
UG_DEFINE_UNARY(log, Log)
UG_DEFINE_UNARY(log2, Log2)
UG_DEFINE_UNARY(log10, Log10)
UG_DEFINE_UNARY(log1p, Log1p)
UG_DEFINE_UNARY(expm1, Expm1)
UG_DEFINE_UNARY(sqrt, Sqrt)
UG_DEFINE_UNARY(rsqrt, Rsqrt)
UG_DEFINE_UNARY(reciprocal, Reciprocal)
UG_DEFINE_UNARY(sin, Sin)
UG_DEFINE_UNARY(cos, Cos)
UG_DEFINE_UNARY(tan, Tan)
UG_DEFINE_UNARY(tanh, Tanh)
UG_DEFINE_UNARY(sigmoid, Sigmoid)
UG_DEFINE_UNARY(silu, Silu)
UG_DEFINE_UNARY(erf, Erf)
UG_DEFINE_UNARY(logical_not, LogicalNot)
#undef UG_DEFINE_UNARY

Tensor isnan(const Tensor& x) { return ops::unary(ops::UnaryOp::IsNan, x); }
Tensor isinf(const Tensor& x) { return ops::unary(ops::UnaryOp::IsInf, x); }
Tensor isfinite(const Tensor& x) { return ops::unary(ops::UnaryOp::IsFinite, x); }
Tensor Tensor::isnan() const { return ug::isnan(*this); }
Tensor Tensor::isinf() const { return ug::isinf(*this); }
Tensor Tensor::isfinite() const { return ug::isfinite(*this); }

Tensor gelu(const Tensor& x, std::string_view approximate) {
  if (approximate == "none") return ops::unary(ops::UnaryOp::Gelu, x);
  if (approximate == "tanh") return ops::unary(ops::UnaryOp::GeluTanh, x);
  fail("[gelu] approximate must be 'none' or 'tanh', got '", approximate, "'");
}
Tensor Tensor::gelu(std::string_view approximate) const { return ug::gelu(*this, approximate); }

}  // namespace ug
