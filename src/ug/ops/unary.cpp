// Unary ops: dtype rule, output allocation, kernel call, one OpCall; the rules, Tensor
// methods and free functions are generated from the entries of unary_kinds.h.
#include "ug/ops/unary.h"

#include <cmath>

#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/inplace_history.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"

namespace ug::ops {

namespace {

struct UnaryInfo {
  const char* name;
  UnaryRule rule;
  Reads reads;
};

constexpr UnaryInfo kUnaryInfo[] = {
#define UG_INFO(Op, method) {Op::name, Op::rule, Op::reads},
    UG_UNARY_ALL(UG_INFO)
#undef UG_INFO
};

const UnaryInfo& info(UnaryOp op) { return kUnaryInfo[static_cast<int>(op)]; }

/** The ops autocast runs in float32, PyTorch's CUDA list (its CPU list has none of them). */
constexpr graph::Autocast autocast_policy(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Expm1:
    case UnaryOp::Log:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
    case UnaryOp::Log1p:
    case UnaryOp::Reciprocal:
    case UnaryOp::Rsqrt:
    case UnaryOp::Tan:
    case UnaryOp::Sinh:
    case UnaryOp::Cosh:
    case UnaryOp::Asin:
    case UnaryOp::Acos: return graph::Autocast::Float32;
    default: return graph::Autocast::None;
  }
}

const graph::OpDef kDefs[] = {
#define UG_DEF(Op, method) graph::OpDef(Op::name, autocast_policy(UnaryOp::Op)),
    UG_UNARY_ALL(UG_DEF)
#undef UG_DEF
};

/** Opens the op's call; gelu's two forms share a name, told apart by "approximate". */
void set_attrs(graph::OpCall& call, UnaryOp op) {
  if (call.capturing() && (op == UnaryOp::Gelu || op == UnaryOp::GeluTanh))
    call.set_attrs({{"approximate", std::string(op == UnaryOp::Gelu ? "none" : "tanh")}});
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
    case UnaryRule::Bitwise:
      if (is_floating(in))
        fail<TypeError>("[", i.name, "] not supported for dtype ", in, " (integer or bool tensors only)");
      return in;
  }
  return in;
}

/** Each op's derivative, from its entry in unary_kinds.h. */
Tensor vjp(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y) {
  switch (op) {
#define UG_CASE(Op, method) \
  case UnaryOp::Op: return Op::vjp(g, x, y);
    UG_UNARY_ALL(UG_CASE)
#undef UG_CASE
  }
  return Tensor();
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x) {
  if (is_complex(x.dtype())) [[unlikely]]
    return complex_math::unary(op, x);
  if (autocast::applies(kDefs[static_cast<int>(op)])) [[unlikely]]
    return autocast::call(kDefs[static_cast<int>(op)], unary, op, x);
  graph::OpCall call(kDefs[static_cast<int>(op)]);
  DType out_dtype = result_dtype(op, x.dtype());
  const UnaryRule rule = info(op).rule;
  Tensor in = rule == UnaryRule::Floating || rule == UnaryRule::Integral ? x.to(out_dtype) : x;
  Tensor out;
  if (int lvl = batching::max_level({&in})) {
    out = batching::wrap(unary(op, batching::physical(in, lvl)), lvl);
  } else {
    out = empty(x.shape(), {.dtype = out_dtype, .device = x.device()});
    backend_for(x.device()).unary(op, in, out);
  }
  set_attrs(call, op);
  // in is x itself wherever a derivative exists: only integers and bool are converted.
  const Reads reads = info(op).reads;
  call.finish(
      {&x}, {&out},
      {reads == Reads::Input ? graph::input(in) : graph::nothing,
       reads == Reads::Output ? graph::output(out) : graph::nothing},
      [op](graph::Saved s, graph::Tensors&& g) { return graph::Tensors{vjp(op, g[0], s[0], s[1])}; },
      // Elementwise: the forward rule is the same derivative times the tangent.
      [op, &in, &out](const graph::Tensors& t) { return graph::Tensors{vjp(op, t[0], in, out)}; });
  return out;
}

void unary_out(UnaryOp op, const Tensor& x, const Tensor& out) {
  if (is_complex(x.dtype()) || is_complex(out.dtype())) [[unlikely]] {
    Tensor(out).copy_(unary(op, x));
    return;
  }
  graph::OpCall call(kDefs[static_cast<int>(op)]);
  if (ops::inplace_needs_rebase(out, &x, info(op).name)) {
    ops::rebase_history(out, unary(op, x.clone()));
    set_attrs(call, op);
    call.finish({&x}, {&out});  // for a capture: the in-place op, its history the ops' own
    return;
  }
  DType want = result_dtype(op, x.dtype());
  if (want != out.dtype() || info(op).rule == UnaryRule::Predicate || batching::max_level({&x, &out})) {
    Tensor result = unary(op, x.shares_storage(out) ? ops::read_before_write(x) : x);
    if (!is_floating(out.dtype()) && is_floating(result.dtype()))
      fail<TypeError>("[", info(op).name, "_] result type ", result.dtype(),
                      " can't be cast to the desired output type ", out.dtype());
    Tensor(out).copy_(result);
  } else {
    backend_for(x.device()).unary(op, x, out);
    out.bump_version();
  }
  set_attrs(call, op);
  call.finish({&x}, {&out});
}

}  // namespace ug::ops

namespace ug {

#define UG_DEFINE_UNARY(Op, method)                                             \
  Tensor method(const Tensor& x) { return ops::unary(ops::UnaryOp::Op, x); }    \
  Tensor Tensor::method() const { return ops::unary(ops::UnaryOp::Op, *this); } \
  Tensor& Tensor::method##_() {                                                 \
    ops::unary_out(ops::UnaryOp::Op, *this, *this);                             \
    return *this;                                                               \
  }
UG_UNARY_MATH_OPS(UG_DEFINE_UNARY)
#undef UG_DEFINE_UNARY

#define UG_DEFINE_PREDICATE(Op, method)                                      \
  Tensor method(const Tensor& x) { return ops::unary(ops::UnaryOp::Op, x); } \
  Tensor Tensor::method() const { return ops::unary(ops::UnaryOp::Op, *this); }
UG_UNARY_PREDICATES(UG_DEFINE_PREDICATE)
#undef UG_DEFINE_PREDICATE

Tensor gelu(const Tensor& x, std::string_view approximate) {
  if (approximate == "none") return ops::unary(ops::UnaryOp::Gelu, x);
  if (approximate == "tanh") return ops::unary(ops::UnaryOp::GeluTanh, x);
  fail("[gelu] approximate must be 'none' or 'tanh', got '", approximate, "'");
}
Tensor Tensor::gelu(std::string_view approximate) const { return ug::gelu(*this, approximate); }

}  // namespace ug
