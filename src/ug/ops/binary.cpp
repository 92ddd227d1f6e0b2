// Binary ops: PyTorch's promotion (dimensioned tensors > 0-d tensors > Python numbers),
// NumPy broadcasting as stride-0 views, then the kernel. Also where, clamp and lerp.
#include "ug/ops/binary.h"

#include <cmath>

#include "ug/backend/backend.h"
#include "ug/graph/forward.h"
#include "ug/graph/op_call.h"
#include "ug/ops/inplace_history.h"
#include "ug/ops/autocast.h"
#include "ug/ops/complex.h"
#include "ug/ops/opmath.h"
#include "ug/ops/rules.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

namespace ug::ops {

namespace {

struct BinaryInfo {
  const char* name;
  BinaryRule rule;
  bool reads_operands, reads_output;
};
constexpr BinaryInfo kBinaryInfo[] = {
#define UG_INFO(Op, method) {Op::name, Op::rule, Op::reads_operands, Op::reads_output},
    UG_BINARY_ALL(UG_INFO)
#undef UG_INFO
};
const BinaryInfo& info(BinaryOp op) { return kBinaryInfo[static_cast<int>(op)]; }

/** pow runs in float32 under autocast, as in PyTorch's CUDA list. */
constexpr graph::Autocast autocast_policy(BinaryOp op) {
  return op == BinaryOp::Pow ? graph::Autocast::Float32 : graph::Autocast::None;
}

const graph::OpDef kDefs[] = {
#define UG_DEF(Op, method) graph::OpDef(Op::name, autocast_policy(BinaryOp::Op)),
    UG_BINARY_ALL(UG_DEF)
#undef UG_DEF
};
const graph::OpDef& def(BinaryOp op) { return kDefs[static_cast<int>(op)]; }

/** The call keeps the operands as given (ONNX broadcasts them itself) and the dtype the
 *  kernel computes in. */
void set_attrs(graph::OpCall& call, DType compute) {
  if (call.capturing()) call.set_attrs({{"compute_dtype", static_cast<int64_t>(compute)}});
}

/** torch's combine_categories: the lower-priority type only counts when its category is higher. */
DType combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return *lower;
  if (!lower) return *higher;
  if (is_complex(*higher)) return *higher;
  if (is_complex(*lower))  // a floating higher keeps its precision: float32 with complex128 is complex64
    return is_floating(*higher) ? (*higher == DType::Float64 ? DType::Complex128 : DType::Complex64) : *lower;
  if (is_floating(*higher)) return *higher;
  if (*higher == DType::Bool || is_floating(*lower)) return promote_types(*higher, *lower);
  return *higher;
}

/** The dtype a Python number takes in promotion: bool, int64, or the default float32. */
DType wrapped_dtype(const Scalar& s) { return s.default_dtype(); }

std::optional<DType> promote_opt(std::optional<DType> a, DType b) { return a ? promote_types(*a, b) : b; }

struct Operands {
  std::optional<DType> dim_result, zero_result, wrapped_result;
  void add(const Tensor& t) {
    if (t.dim() > 0) dim_result = promote_opt(dim_result, t.dtype());
    else zero_result = promote_opt(zero_result, t.dtype());
  }
  void add(const Scalar& s) { wrapped_result = promote_opt(wrapped_result, wrapped_dtype(s)); }
  DType result() const {
    std::optional<DType> low =
        zero_result || wrapped_result ? std::optional<DType>(combine(zero_result, wrapped_result)) : std::nullopt;
    return combine(dim_result, low);
  }
};

/** The dtype the kernel computes in, and the dtype of the result. */
std::pair<DType, DType> compute_and_out(BinaryOp op, DType common, DType a, DType b) {
  const BinaryInfo& i = info(op);
  switch (i.rule) {
    case BinaryRule::Arithmetic:
      if (op == BinaryOp::Sub && (a == DType::Bool || b == DType::Bool))
        fail<TypeError>(
            "[sub] subtraction with a bool tensor is not supported; to invert a mask "
            "use ~ or logical_not()");
      return {common, common};
    case BinaryRule::TrueDivide: {
      const DType t = is_complex(common) ? common : to_floating(common);
      return {t, t};
    }
    case BinaryRule::Compare: return {common, DType::Bool};
    case BinaryRule::Bitwise:
      if (is_floating(common))
        fail<TypeError>("[", i.name, "] not supported for dtypes ", a, " and ", b, " (integer or bool tensors only)");
      if (common == DType::Bool && (op == BinaryOp::BitwiseLeftShift || op == BinaryOp::BitwiseRightShift))
        fail<TypeError>("[", i.name, "] not supported for bool tensors (integer tensors only)");
      return {common, common};
  }
  return {common, common};
}

}  // namespace

double rounded_to(double v, DType t) {
  const float f = static_cast<float>(v);
  if (t == DType::BFloat16) return static_cast<float>(BFloat16(f));
  if (t == DType::Float16) return static_cast<float>(Half(f));
  return v;
}

namespace {

/** Whether a Python number meets a 16-bit `compute` dtype in float32, unrounded, as torch's CPU
 *  kernels read it for mul and div (either side) and floor_divide (number second): bfloat16
 *  x * 1.0123 multiplies by 1.0123, not by 1.015625. add, sub, pow and the rest round the
 *  number to the tensor's dtype first, as torch's do. A number the dtype holds exactly gives
 *  the same result either way and keeps the 16-bit kernel. */
bool scalar_in_opmath(BinaryOp op, DType compute, const Scalar& s, bool scalar_first) {
  const bool reads_float = op == BinaryOp::Mul || op == BinaryOp::Div || (!scalar_first && op == BinaryOp::FloorDivide);
  if (!reads_float || !is_16_bit(compute) || s.is_bool() || s.is_complex()) return false;
  const double v = s.to_double();
  return rounded_to(v, compute) != v && !std::isnan(v);
}

void check_integer_division(BinaryOp op, const Tensor& b) {
  if ((op == BinaryOp::FloorDivide || op == BinaryOp::Remainder) && !is_floating(b.dtype()) && ops::any_true(b.eq(0)))
    fail<RuntimeError>("[", info(op).name, "] ZeroDivisionError: integer division by zero");
  if (op == BinaryOp::Pow && !is_floating(b.dtype()) && b.dtype() != DType::Bool && ops::any_true(b.lt(0)))
    fail<RuntimeError>("[pow] integers to negative integer powers are not allowed");
}

/** A gradient of a promoted, broadcast operand, brought back to the operand as it was given
 *  (summed over the broadcast dims, cast to its dtype); integer operands get none. */
Tensor as_operand(const Tensor& g, const Shape& shape, DType dtype) {
  if (!g.defined() || !is_inexact(dtype)) return Tensor();
  return real_part_if(autograd::sum_to(g, shape), dtype).to(dtype);
}

/** Each op's derivative, from its entry in binary_kinds.h. */
std::pair<Tensor, Tensor> vjp(BinaryOp op, const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& y) {
  switch (op) {
#define UG_CASE(Op, method) \
  case BinaryOp::Op: return Op::vjp(g, a, b, y);
    UG_BINARY_ALL(UG_CASE)
#undef UG_CASE
  }
  return {};
}

Tensor run(BinaryOp op, DType common, const Tensor& a, const Tensor& b) {
  if (is_complex(common)) [[unlikely]]
    return complex_math::binary(op, a.to(common), b.to(common));
  if (autocast::applies(def(op))) [[unlikely]]
    return autocast::call(
        def(op), [op](const Tensor& x, const Tensor& y) { return binary(op, x, y); }, a, b);
  graph::OpCall call(def(op));
  const auto [compute, out_dtype] = compute_and_out(op, common, a.dtype(), b.dtype());
  if (a.device() != b.device())
    fail<RuntimeError>("[", info(op).name, "] expected both tensors on one device, got ", a.device(), " and ",
                       b.device());
  Shape shape = broadcast_shapes(a.shape(), b.shape(), info(op).name);
  // Each operand is kept for backward as promoted, not broadcast (as torch keeps it): hooks
  // on saved tensors see, and save_on_cpu copies, the operand's own size.
  Tensor ap = a.to(compute), bp = b.to(compute);
  Tensor ac = ap.expand(shape), bc = bp.expand(shape);
  check_integer_division(op, bc);
  Tensor out;
  if (int lvl = batching::max_level({&ac, &bc})) {
    // Both are already broadcast to the logical shape: the physical tensors line up.
    out = batching::wrap(run(op, common, batching::physical(ac, lvl), batching::physical(bc, lvl)), lvl);
  } else {
    out = empty(shape, {.dtype = out_dtype, .device = a.device()});
    backend_for(a.device()).binary(op, ac, bc, out);
  }
  set_attrs(call, compute);
  // A program calls back an activation's gradient (one fused kernel, see its export rule) and
  // an op on operands without a graph form (shifts of signed integers, // and % of bools).
  if (call.capturing())
    call.set_replay([op, common](const graph::Tensors& in) { return graph::Tensors{run(op, common, in[0], in[1])}; },
                    graph::ReplaySizes::None);
  // Only what the rule reads is kept (add and sub need nothing, pow also needs its output); a
  // product keeps each operand for the other's gradient alone, so x * 0.5 keeps nothing of x
  // (attention's q * scale kept the whole q/k/v projection alive through its view).
  const bool operands = info(op).reads_operands, mul = op == BinaryOp::Mul;
  const bool keep_a = operands && (!mul || autograd::requires_grad(b));
  const bool keep_b = operands && (!mul || autograd::requires_grad(a));
  // sub's second gradient, -g, is a tensor of the output's size: made only when b takes it (a
  // loss's target does not).
  const bool neg_b = op == BinaryOp::Sub && autograd::requires_grad(b);
  // pow reads its output for the exponent's gradient only.
  const bool keep_out = info(op).reads_output && (op != BinaryOp::Pow || autograd::requires_grad(b));
  call.finish(
      {&a, &b}, {&out},
      {keep_a ? graph::input(ap) : graph::nothing, keep_b ? graph::input(bp) : graph::nothing,
       keep_out ? graph::output(out) : graph::nothing},
      [&] {  // the captures are built only when a node is recorded
        return [op, mul, neg_b, sa = a.shape(), sb = b.shape(), da = a.dtype(), db = b.dtype()](graph::Saved s,
                                                                                                graph::Tensors&& g) {
          if (mul)  // Mul::vjp, {g * b, g * a}, for the operands kept (g has the broadcast shape)
            return graph::Tensors{s[1].defined() ? as_operand(g[0] * s[1], sa, da) : Tensor(),
                                  s[0].defined() ? as_operand(g[0] * s[0], sb, db) : Tensor()};
          if (op == BinaryOp::Sub)  // Sub::vjp, {g, -g}
            return graph::Tensors{as_operand(g[0], sa, da), neg_b ? as_operand(-g[0], sb, db) : Tensor()};
          auto broadcast = [&g](const Tensor& t) { return t.defined() ? t.expand(g[0].shape()) : t; };
          auto [ga, gb] = vjp(op, g[0], broadcast(s[0]), broadcast(s[1]), s[2]);
          return graph::Tensors{as_operand(ga, sa, da), as_operand(gb, sb, db)};
        };
      },
      [&, compute = compute](const graph::Tensors& t) {  // clang 14 cannot capture a binding by &
        Tensor ta = t[0].defined() ? vjp(op, t[0].to(compute).expand(shape), ac, bc, out).first : Tensor();
        Tensor tb = t[1].defined() ? vjp(op, t[1].to(compute).expand(shape), ac, bc, out).second : Tensor();
        return graph::Tensors{ta.defined() && tb.defined() ? ta + tb : ta.defined() ? ta : tb};
      });
  return out;
}

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  Operands ops;
  ops.add(a);
  ops.add(b);
  return ops.result();
}

DType result_type(const Tensor& a, const Scalar& b) {
  Operands ops;
  ops.add(a);
  ops.add(b);
  return ops.result();
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) { return run(op, result_type(a, b), a, b); }

// A Python number becomes a 0-d tensor of the dtype the kernel computes in (so 255 / -3 on
// uint8 divides by -3.0, not by a wrapped 253).
Tensor binary(BinaryOp op, const Tensor& a, Scalar b) {
  DType common = result_type(a, b);
  DType compute = compute_and_out(op, common, a.dtype(), b.is_bool() ? DType::Bool : common).first;
  if (scalar_in_opmath(op, compute, b, false))
    return in_opmath([op, &b](const Tensor& x) { return binary(op, x, b); }, a);
  return run(op, common, a, scalar_tensor(b, {.dtype = compute, .device = a.device()}));
}

Tensor binary(BinaryOp op, Scalar a, const Tensor& b) {
  DType common = result_type(b, a);
  DType compute = compute_and_out(op, common, a.is_bool() ? DType::Bool : common, b.dtype()).first;
  if (scalar_in_opmath(op, compute, a, true))
    return in_opmath([op, &a](const Tensor& y) { return binary(op, a, y); }, b);
  return run(op, common, scalar_tensor(a, {.dtype = compute, .device = b.device()}), b);
}

void binary_inplace(BinaryOp op, const Tensor& a, Scalar b) {
  const DType common = result_type(a, b);
  if (scalar_in_opmath(op, compute_and_out(op, common, a.dtype(), common).first, b, false))
    Tensor(a).copy_(binary(op, read_before_write(a), b));
  else binary_inplace(op, a, scalar_tensor(b, {.dtype = common, .device = a.device()}));
}

void binary_inplace(BinaryOp op, const Tensor& a, const Tensor& b) {
  graph::OpCall call(def(op));
  DType common = result_type(a, b);
  auto [compute, out_dtype] = compute_and_out(op, common, a.dtype(), b.dtype());
  if (promote_types(out_dtype, a.dtype()) != a.dtype() && !(is_floating(a.dtype()) && is_floating(out_dtype)))
    fail<TypeError>("[", info(op).name, "_] result type ", out_dtype, " can't be cast to the desired output type ",
                    a.dtype());
  Shape shape = broadcast_shapes(a.shape(), b.shape(), info(op).name);
  if (!(shape == a.shape()))
    fail("[", info(op).name, "_] output with shape ", a.shape(), " doesn't match the broadcast shape ", shape);
  if (ops::inplace_needs_rebase(a, &b, info(op).name)) {
    ops::rebase_history(a, run(op, common, a.clone(), b).to(a.dtype()));
    set_attrs(call, compute);
    call.finish({&a, &b}, {&a});  // for a capture: the in-place op, its history the ops' own
    return;
  }
  if (compute == a.dtype() && out_dtype == a.dtype() && !a.shares_storage(b) && !is_complex(compute) &&
      !batching::max_level({&a, &b})) {
    Tensor bc = b.to(compute).expand(shape);
    check_integer_division(op, bc);
    backend_for(a.device()).binary(op, a, bc, a);
    a.bump_version();
  } else {
    Tensor(a).copy_(run(op, common, ops::read_before_write(a), b));
  }
  set_attrs(call, compute);
  call.finish({&a, &b}, {&a});
}

}  // namespace ug::ops

namespace ug {

#define UG_DEFINE_BINARY(Op, name)                                                                        \
  Tensor name(const Tensor& a, const Tensor& b) { return ops::binary(ops::BinaryOp::Op, a, b); }          \
  Tensor name(const Tensor& a, Scalar b) { return ops::binary(ops::BinaryOp::Op, a, b); }                 \
  Tensor name(Scalar a, const Tensor& b) { return ops::binary(ops::BinaryOp::Op, a, b); }                 \
  Tensor Tensor::name(const Tensor& other) const { return ops::binary(ops::BinaryOp::Op, *this, other); } \
  Tensor Tensor::name(Scalar other) const { return ops::binary(ops::BinaryOp::Op, *this, other); }        \
  Tensor& Tensor::name##_(const Tensor& other) {                                                          \
    ops::binary_inplace(ops::BinaryOp::Op, *this, other);                                                 \
    return *this;                                                                                         \
  }                                                                                                       \
  Tensor& Tensor::name##_(Scalar other) {                                                                 \
    ops::binary_inplace(ops::BinaryOp::Op, *this, other);                                                 \
    return *this;                                                                                         \
  }
UG_BINARY_PUBLIC(UG_DEFINE_BINARY)
#undef UG_DEFINE_BINARY

namespace {
const graph::OpDef kWhere("where");
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  graph::OpCall call(kWhere);
  if (cond.dtype() != DType::Bool && cond.dtype() != DType::UInt8)
    fail<TypeError>("[where] condition must be a bool tensor, got ", cond.dtype());
  DType dtype = ops::result_type(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, {.dtype = dtype, .device = a.device()});
  Tensor c = cond.to(DType::Bool).expand(shape), ac = a.to(dtype).expand(shape), bc = b.to(dtype).expand(shape);
  if (int lvl = batching::max_level({&c, &ac, &bc})) {
    using batching::physical;
    out = batching::wrap(where(physical(c, lvl), physical(ac, lvl), physical(bc, lvl)), lvl);
  } else {
    backend_for(a.device()).where(c, ac, bc, out);
  }
  call.finish(
      {&cond, &a, &b}, {&out}, {graph::input(c)},
      [&] {  // the captures are built only when a node is recorded
        return [sa = a.shape(), sb = b.shape(), da = a.dtype(), db = b.dtype()](graph::Saved s, graph::Tensors&& g) {
          return graph::Tensors{Tensor(), ops::as_operand(where(s[0], g[0], 0), sa, da),
                                ops::as_operand(where(s[0], 0, g[0]), sb, db)};
        };
      },
      [&](const graph::Tensors& t) {
        Tensor ta =
            t[1].defined() ? t[1].to(dtype).expand(shape) : zeros(shape, {.dtype = dtype, .device = a.device()});
        Tensor tb =
            t[2].defined() ? t[2].to(dtype).expand(shape) : zeros(shape, {.dtype = dtype, .device = a.device()});
        return graph::Tensors{where(c, ta, tb)};
      });
  return out;
}
Tensor where(const Tensor& cond, Scalar a, const Tensor& b) {
  return where(cond, scalar_tensor(a, {.dtype = ops::result_type(b, a), .device = b.device()}), b);
}
Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  return where(cond, a, scalar_tensor(b, {.dtype = ops::result_type(a, b), .device = a.device()}));
}

namespace {

/** Whether a derivative of a floating result can reach one of the operands (recorded for
 *  backward, or carrying a forward tangent): only then does clamp route its gradient. */
bool differentiated(const std::vector<const Tensor*>& operands) {
  if (!is_floating(operands.front()->dtype())) return false;
  if (GradMode::is_enabled())
    for (const Tensor* t : operands)
      if (autograd::requires_grad(*t)) return true;
  if (forward::active())
    for (const Tensor* t : operands)
      if (forward::has_tangent(*t)) return true;
  return false;
}

}  // namespace

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  if (!min && !max) fail("[clamp] at least one of min and max must be given");
  Tensor out = x;
  if (min) out = maximum(out, *min);
  if (max) out = minimum(out, *max);
  if (!differentiated({&x})) return out;  // no gradient to route
  // torch's subgradient: x takes the whole gradient on the bounds too (maximum and minimum
  // would halve it there); off them out's own gradient in x is 0.
  const Tensor inside = min && max ? (x >= *min).logical_and(x <= *max) : min ? x >= *min : x <= *max;
  return where(inside, x, out);
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const { return ug::clamp(*this, min, max); }
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  if (!min && !max) fail("[clamp] at least one of min and max must be given");
  const Tensor& x = *this;
  Tensor out = x;
  if (min) out = ug::maximum(out, *min);
  if (max) out = ug::minimum(out, *max);
  std::vector<const Tensor*> operands{&x};
  if (min) operands.push_back(&*min);
  if (max) operands.push_back(&*max);
  if (!differentiated(operands)) return out;  // no gradient to route
  // torch's subgradients: x takes the gradient where min <= x <= max, min where x < min < max,
  // max where x > max or max < min; nothing does elsewhere (NaN, x < min == max).
  Tensor routed = out.detach();
  if (max) routed = ug::where(min ? (x > *max).logical_or(*max < *min) : x > *max, *max, routed);
  if (min) routed = ug::where(max ? (x < *min).logical_and(*min < *max) : x < *min, *min, routed);
  const Tensor inside = min && max ? (x >= *min).logical_and(x <= *max) : min ? x >= *min : x <= *max;
  return ug::where(inside, x, routed);
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  // on a copy when gradients flow: the ops inside save their input, which copy_ overwrites
  return copy_(ug::clamp(ops::read_before_write(*this), min, max));
}

// torch's lerp: from the nearer end, so that a weight of 1 gives `end` exactly (a + 1 * (b - a)
// need not).
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  return ops::in_opmath(
      [](const Tensor& a, const Tensor& b, const Tensor& w) {
        const Tensor d = b - a;
        return where(w.abs() < 0.5, a + w * d, b - d * (1 - w));
      },
      start, end, weight);
}
Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight) {
  return ops::in_opmath(
      [&weight](const Tensor& a, const Tensor& b) {
        const double w = weight.to_double();
        return std::abs(w) < 0.5 ? a + weight * (b - a) : b - (b - a) * (1 - w);
      },
      start, end);
}

namespace {
/** torch's refusal of a fractional alpha for integer tensors (whatever its value). */
void check_alpha(const Tensor& a, const Tensor& b, const Scalar& alpha, const char* op) {
  if (alpha.is_floating() && !is_inexact(a.dtype()) && !is_inexact(b.dtype()))
    fail<RuntimeError>("[", op, "] alpha must not be a floating-point number for ", a.dtype(), " and ", b.dtype(),
                       " tensors");
}
bool is_one(const Scalar& s) { return !s.is_complex() && s.to_double() == 1.0; }

/** a op alpha * b (add, sub). On 16-bit operands, as torch's: alpha rounded to their dtype, the
 *  result computed in float32 and rounded once. */
Tensor with_alpha(ops::BinaryOp op, const char* name, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_alpha(a, b, alpha, name);
  if (is_one(alpha)) return ops::binary(op, a, b);
  const DType t = ops::result_type(a, b);
  const Scalar k = alpha.is_floating() && ops::is_16_bit(t) ? Scalar(ops::rounded_to(alpha.to_double(), t)) : alpha;
  return ops::in_opmath([&](const Tensor& x, const Tensor& y) { return ops::binary(op, x, y * k); }, a, b);
}

/** The in-place form: in place where nothing rounds in between, through a copy on 16-bit operands. */
Tensor& with_alpha_(ops::BinaryOp op, const char* name, Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_alpha(a, b, alpha, name);
  if (ops::is_16_bit(ops::result_type(a, b)) && !is_one(alpha))
    return a.copy_(with_alpha(op, name, ops::read_before_write(a), b, alpha));
  ops::binary_inplace(op, a, is_one(alpha) ? b : b * alpha);
  return a;
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  return with_alpha(ops::BinaryOp::Add, "add", a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  return with_alpha(ops::BinaryOp::Sub, "sub", a, b, alpha);
}
Tensor& add_(Tensor& a, const Tensor& b, Scalar alpha) { return with_alpha_(ops::BinaryOp::Add, "add", a, b, alpha); }
Tensor& sub_(Tensor& a, const Tensor& b, Scalar alpha) { return with_alpha_(ops::BinaryOp::Sub, "sub", a, b, alpha); }
Tensor Tensor::lerp(const Tensor& end, Scalar weight) const { return ug::lerp(*this, end, weight); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return ug::lerp(*this, end, weight); }

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  if (rtol < 0 || atol < 0) fail("[isclose] rtol and atol must be non-negative, got ", rtol, " and ", atol);
  Tensor close = a.eq(b);
  if (is_inexact(ops::result_type(a, b))) {
    Tensor diff = (a - b).abs();
    Tensor within = diff.le((b.abs() * rtol) + atol).logical_and(isfinite(diff));
    close = close.logical_or(within);
    if (equal_nan) close = close.logical_or(a.isnan().logical_and(b.isnan()));
  }
  return close;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return isclose(a, b, rtol, atol, equal_nan).all().item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && (a.numel() == 0 || a.eq(b).all().item<bool>());
}

}  // namespace ug
