// Unary ops: dtype rule, output allocation, kernel call; the Tensor methods and free
// functions are generated from the op list in unary.h.
#include "ug/ops/unary.h"

#include <cmath>

#include "ug/autograd/debugging.h"
#include "ug/autograd/forward.h"
#include "ug/autograd/record.h"
#include "ug/backend/backend.h"
#include "ug/core/batching.h"
#include "ug/ops/binary.h"
#include "ug/onnx/trace.h"

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

const onnx::TracedOp kTraced[] = {
#define UG_TRACED(Op) onnx::TracedOp(Op::name),
    UG_UNARY_OPS(UG_TRACED)
#undef UG_TRACED
};

/** The op's export trace: gelu's two forms share a name, told apart by "approximate". */
void record_trace(onnx::TraceScope& trace, UnaryOp op, const Tensor& x, const Tensor& out) {
  onnx::Attrs attrs;
  if (op == UnaryOp::Gelu || op == UnaryOp::GeluTanh)
    attrs.emplace_back("approximate", std::string(op == UnaryOp::Gelu ? "none" : "tanh"));
  trace.record({x}, {out}, std::move(attrs));
}

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

/** Each op's derivative: the input gradient from the output gradient g, the input x and
 *  the output y. Written with ops, so the rules are differentiable themselves. */
Tensor vjp(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y) {
  constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  switch (op) {
    case UnaryOp::Neg: return -g;
    case UnaryOp::Abs: return g * x.sign();
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc: return zeros_like(g);  // piecewise constant
    case UnaryOp::Square: return g * x * 2;
    case UnaryOp::Relu: return binary(BinaryOp::ReluBackward, g, y);
    case UnaryOp::Exp: return g * y;
    case UnaryOp::Exp2: return g * y * kLn2;
    case UnaryOp::Log: return g / x;
    case UnaryOp::Log2: return g / (x * kLn2);
    case UnaryOp::Log10: return g / (x * kLn10);
    case UnaryOp::Log1p: return g / (x + 1);
    case UnaryOp::Expm1: return g * (y + 1);
    case UnaryOp::Sqrt: return g / (y * 2);
    case UnaryOp::Rsqrt: return g * y * y * y * -0.5;
    case UnaryOp::Reciprocal: return -g * y * y;
    case UnaryOp::Sin: return g * x.cos();
    case UnaryOp::Cos: return -g * x.sin();
    case UnaryOp::Tan: return g * (y * y + 1);
    case UnaryOp::Tanh: return binary(BinaryOp::TanhBackward, g, y);
    case UnaryOp::Sigmoid: return binary(BinaryOp::SigmoidBackward, g, y);
    case UnaryOp::Silu: return binary(BinaryOp::SiluBackward, g, x);
    case UnaryOp::Erf: return g * (-(x * x)).exp() * kTwoOverSqrtPi;
    case UnaryOp::Gelu: return binary(BinaryOp::GeluBackward, g, x);
    case UnaryOp::GeluTanh: {
      constexpr double k = 0.79788456080286535588, c = 0.044715;
      Tensor t = ((x + x * x * x * c) * k).tanh();
      return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * k * (x * x * (3 * c) + 1));
    }
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
    case UnaryOp::IsFinite:
    case UnaryOp::LogicalNot: break;
  }
  fail<RuntimeError>("[", info(op).name, "] is not differentiable");
}

/** Which of input and output the op's rule reads: only those are kept for backward (a kept
 *  tensor costs memory, and changing it in place would make backward refuse to run). */
struct Needs {
  bool input, output;
};
Needs needs(UnaryOp op) {
  switch (op) {
    case UnaryOp::Relu:
    case UnaryOp::Exp:
    case UnaryOp::Exp2:
    case UnaryOp::Expm1:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Reciprocal:
    case UnaryOp::Tan:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid: return {false, true};
    case UnaryOp::Neg:
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc: return {false, false};
    default: return {true, false};
  }
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x) {
  onnx::TraceScope trace(kTraced[static_cast<int>(op)]);
  DType out_dtype = result_dtype(op, x.dtype());
  const UnaryRule rule = info(op).rule;
  Tensor in = rule == UnaryRule::Floating || rule == UnaryRule::Integral ? x.to(out_dtype) : x;
  Tensor out;
  if (int lvl = batching::max_level({&in})) {
    out = batching::wrap(unary(op, batching::physical(in, lvl)), lvl);
  } else {
    out = empty(x.shape(), {.dtype = out_dtype, .device = x.device()});
    backend_for(x.device()).unary(op, in, out);
    debugging::check_output(out, info(op).name);
  }
  if (forward::active())  // elementwise: the forward rule is the same derivative times the tangent
    forward::propagate({&in}, out, [op, in, out](const std::vector<Tensor>& t) { return vjp(op, t[0], in, out); });
  if (trace) record_trace(trace, op, x, out);
  if (is_floating(out_dtype) && autograd::needs_grad({&in})) {
    const Needs need = needs(op);
    autograd::record(info(op).name, {in}, {&out},
                     [op, xs = need.input ? autograd::save(in) : SavedTensor(),
                      ys = need.output ? autograd::save_output(out) : SavedTensor()](std::vector<Tensor>&& g, Node* n) {
                       const char* name = info(op).name;
                       return std::vector<Tensor>{vjp(op, g[0], xs.unpack(n, name), ys.unpack(n, name))};
                     });
  }
  return out;
}

void unary_out(UnaryOp op, const Tensor& x, const Tensor& out) {
  onnx::TraceScope trace(kTraced[static_cast<int>(op)]);
  if (autograd::inplace_needs_rebase(out, &x, info(op).name)) {
    autograd::rebase_history(out, unary(op, x.clone()));
    return;
  }
  DType want = result_dtype(op, x.dtype());
  if (want != out.dtype() || info(op).rule == UnaryRule::Predicate) {
    Tensor result = unary(op, x);
    if (!is_floating(out.dtype()) && is_floating(result.dtype()))
      fail<TypeError>("[", info(op).name, "_] result type ", result.dtype(),
                      " can't be cast to the desired output type ", out.dtype());
    Tensor(out).copy_(result);
    if (trace) record_trace(trace, op, x, out);
    return;
  }
  backend_for(x.device()).unary(op, x, out);
  out.bump_version();
  if (trace) record_trace(trace, op, x, out);
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
