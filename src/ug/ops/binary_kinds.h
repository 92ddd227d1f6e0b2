// The elementwise binary ops, one entry each: its name, dtype rule, scalar math (shared by
// every backend), what its derivative reads and the derivative itself. Inputs are broadcast
// (NumPy rules) and promoted (PyTorch rules) first. The enum, kernels, Tensor methods, free
// functions and Python bindings are generated from the lists at the end.
//
// vjp(g, a, b, y) gives the gradients of both operands (already promoted and broadcast) from
// the output gradient g and the output y; a template so that the kernels need no Tensor
// (instantiated in ops/binary.cpp). The forward-mode rule is the same with tangents for g.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace ug::ops {

enum class BinaryRule : uint8_t {
  Arithmetic,  // result has the promoted dtype
  TrueDivide,  // integers are computed in float32
  Compare,     // computed in the promoted dtype, result is bool
  Bitwise,     // integers and bool only
};

// The lists, ahead of the entries (an activation gradient's rule names its own enum
// value). X(Entry, method): Tensor methods (with and without a Scalar, in-place forms
// method_), free functions ug::method and Python bindings each. The activation gradients are
// internal: enum entries and kernels only.
// The op lists are laid out by hand, not by clang-format:
// clang-format off
#define UG_BINARY_PUBLIC(X)                                                                    \
  X(Add, add) X(Sub, sub) X(Mul, mul) X(Div, div) X(FloorDivide, floor_divide)                 \
  X(Remainder, remainder) X(Pow, pow) X(Maximum, maximum) X(Minimum, minimum) X(Atan2, atan2)  \
  X(LogAddExp, logaddexp)                                                                      \
  X(Eq, eq) X(Ne, ne) X(Lt, lt) X(Le, le) X(Gt, gt) X(Ge, ge) X(LogicalAnd, logical_and)       \
  X(LogicalOr, logical_or) X(LogicalXor, logical_xor) X(BitwiseAnd, bitwise_and)               \
  X(BitwiseOr, bitwise_or) X(BitwiseXor, bitwise_xor)                                         \
  X(BitwiseLeftShift, bitwise_left_shift) X(BitwiseRightShift, bitwise_right_shift)
#define UG_BINARY_GRADS(X)                                                                     \
  X(ReluBackward, relu_backward) X(TanhBackward, tanh_backward) X(SigmoidBackward, sigmoid_backward) \
  X(SiluBackward, silu_backward) X(GeluBackward, gelu_backward)

/** Every binary op: X(Entry, method). */
#define UG_BINARY_ALL(X) UG_BINARY_PUBLIC(X) UG_BINARY_GRADS(X)
// clang-format on

enum class BinaryOp : uint8_t {
#define UG_ENUM(Op, method) Op,
  UG_BINARY_ALL(UG_ENUM)
#undef UG_ENUM
};

template <class T> inline constexpr bool int_like_v = std::is_integral_v<T>;

/** What a binary op's derivative reads: only that is kept for backward. */
struct ReadsOperands {
  static constexpr bool reads_operands = true, reads_output = false;
};
struct ReadsNothing {
  static constexpr bool reads_operands = false, reads_output = false;
};
/** Comparisons and bitwise ops: bool or integer results have no derivative. */
struct NoDerivative : ReadsNothing {
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn&, const Tn&, const Tn&, const Tn&) { return {}; }
};

struct Add : ReadsNothing {
  static constexpr const char* name = "add";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else return a + b;
  }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn&, const Tn&, const Tn&) { return {g, g}; }
};
struct Sub : ReadsNothing {
  static constexpr const char* name = "sub";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) { return static_cast<T>(a - b); }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn&, const Tn&, const Tn&) { return {g, -g}; }
};
struct Mul : ReadsOperands {
  static constexpr const char* name = "mul";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return a * b;
  }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) {
    return {g * b, g * a};
  }
};
struct Div : ReadsOperands {
  static constexpr const char* name = "div";
  static constexpr BinaryRule rule = BinaryRule::TrueDivide;
  template <class T> static T f(T a, T b) { return a / b; }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) {
    return {g / b, -g * a / (b * b)};
  }
};
struct FloorDivide : ReadsNothing {  // Python's //: rounds toward minus infinity
  static constexpr const char* name = "floor_divide";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) {
    if constexpr (int_like_v<T>) {
      T q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
    } else {
      if (b == T(0)) return a / b;
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
      T floordiv = std::floor(div);
      if (div - floordiv > T(0.5)) floordiv += T(1);
      return div == T(0) ? std::copysign(T(0), a / b) : floordiv;
    }
  }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn&, const Tn&, const Tn&) {
    return {zeros_like(g), zeros_like(g)};  // piecewise constant
  }
};
struct Remainder : ReadsOperands {  // Python's %: the result has the sign of the divisor
  static constexpr const char* name = "remainder";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) {
    if constexpr (int_like_v<T>) {
      T r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    } else {
      T r = std::fmod(a, b);
      return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
    }
  }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) {
    return {g, -g * floor_divide(a, b)};
  }
};
struct Pow {
  static constexpr const char* name = "pow";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) {
    if constexpr (int_like_v<T>) {  // exponent >= 0 is checked by the op
      T result = 1;
      for (T base = a, e = b; e > 0; e = static_cast<T>(e >> 1), base = static_cast<T>(base * base))
        if (e & 1) result = static_cast<T>(result * base);
      return result;
    } else {
      return std::pow(a, b);
    }
  }
  static constexpr bool reads_operands = true, reads_output = true;
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn& y) {
    // d/db is 0 where a == 0 and b >= 0 (where log(a) would give -inf * 0). The output is
    // kept only for it: not where b takes no gradient (x ** 2), as in torch.
    Tn db = y.defined() ? where(a.eq(0).logical_and(b.ge(0)), zeros_like(g), g * y * a.log()) : Tn();
    // d/da is 0 where b == 0 (torch's), also at a == 0 where b * a^(b - 1) would be 0 * inf.
    return {where(b.eq(0), zeros_like(g), g * b * a.pow(b - 1)), db};
  }
};
/** The derivative of maximum and minimum: g goes to the operand picked (`a_won` where a was),
 *  and ties split it in halves, as in PyTorch. */
template <class Tn> std::pair<Tn, Tn> pick_vjp(const Tn& g, const Tn& a, const Tn& b, const Tn& a_won) {
  Tn ga = where(a.eq(b), g * 0.5, where(a_won, g, 0));
  return {ga, g - ga};
}
struct Maximum : ReadsOperands {  // propagates NaN, like torch.maximum
  static constexpr const char* name = "maximum";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) { return (a != a) ? a : (b != b) ? b : (a > b ? a : b); }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) {
    return pick_vjp(g, a, b, a.gt(b));
  }
};
struct Minimum : ReadsOperands {
  static constexpr const char* name = "minimum";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) { return (a != a) ? a : (b != b) ? b : (a < b ? a : b); }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) {
    return pick_vjp(g, a, b, a.lt(b));
  }
};
struct Atan2 : ReadsOperands {
  static constexpr const char* name = "atan2";
  static constexpr BinaryRule rule = BinaryRule::TrueDivide;
  template <class T> static T f(T a, T b) { return std::atan2(a, b); }
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) {
    // torch's: 1 / (a^2 + b^2) taken as 0 where it is infinite, so atan2(0, 0) has gradient 0;
    // the inner where keeps higher derivatives free of 1 / 0.
    Tn r = a * a + b * b;
    Tn infinite = r.reciprocal().isinf();
    Tn recip = where(infinite, zeros_like(r), where(infinite, ones_like(r), r).reciprocal());
    return {g * b * recip, -g * a * recip};
  }
};

struct LogAddExp : ReadsOperands {  // log(exp(a) + exp(b)) without overflow, like torch.logaddexp
  static constexpr const char* name = "logaddexp";
  static constexpr BinaryRule rule = BinaryRule::TrueDivide;
  template <class T> static T f(T a, T b) {
    const T m = a > b ? a : b;
    if (a != a || b != b) return a + b;  // NaN
    if (std::isinf(m)) return m;         // both -inf, or one +inf
    return m + std::log1p(std::exp(-std::abs(a - b)));
  }
  // Each operand's share of the sum, from the operands alone (torch's: the output may then be
  // written in place before backward).
  template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) {
    return {g * (a - b).sigmoid(), g * (b - a).sigmoid()};
  }
};

#define UG_COMPARE(Name, opname, expr)                          \
  struct Name : NoDerivative {                                  \
    static constexpr const char* name = opname;                 \
    static constexpr BinaryRule rule = BinaryRule::Compare;     \
    template <class T> static bool f(T a, T b) { return expr; } \
  };
UG_COMPARE(Eq, "eq", a == b)
UG_COMPARE(Ne, "ne", a != b)
UG_COMPARE(Lt, "lt", a < b)
UG_COMPARE(Le, "le", a <= b)
UG_COMPARE(Gt, "gt", a > b)
UG_COMPARE(Ge, "ge", a >= b)
UG_COMPARE(LogicalAnd, "logical_and", a != T(0) && b != T(0))
UG_COMPARE(LogicalOr, "logical_or", a != T(0) || b != T(0))
UG_COMPARE(LogicalXor, "logical_xor", (a != T(0)) != (b != T(0)))
#undef UG_COMPARE

#define UG_BITWISE(Name, opname, op)                              \
  struct Name : NoDerivative {                                    \
    static constexpr const char* name = opname;                   \
    static constexpr BinaryRule rule = BinaryRule::Bitwise;       \
    template <class T> static T f(T a, T b) {                     \
      if constexpr (int_like_v<T>) return static_cast<T>(a op b); \
      else return a;                                              \
    }                                                             \
  };
UG_BITWISE(BitwiseAnd, "bitwise_and", &)
UG_BITWISE(BitwiseOr, "bitwise_or", |)
UG_BITWISE(BitwiseXor, "bitwise_xor", ^)
#undef UG_BITWISE

/** Shifts as PyTorch (and ONNX's BitShift): a count outside [0, bits) shifts every bit out, the
 *  sign filling a right shift; a left shift wraps as unsigned. Bool is refused in binary.cpp. */
template <class T> inline bool shift_out_of_range(T b) {
  if constexpr (std::is_signed_v<T>) return b < T(0) || b >= T(sizeof(T) * 8);
  else return b >= T(sizeof(T) * 8);
}
struct BitwiseLeftShift : NoDerivative {
  static constexpr const char* name = "bitwise_left_shift";
  static constexpr BinaryRule rule = BinaryRule::Bitwise;
  template <class T> static T f(T a, T b) {
    if constexpr (int_like_v<T> && !std::is_same_v<T, bool>) {
      using U = std::make_unsigned_t<T>;
      return shift_out_of_range(b) ? T(0) : static_cast<T>(static_cast<U>(static_cast<U>(a) << b));
    } else {
      return a;
    }
  }
};
struct BitwiseRightShift : NoDerivative {
  static constexpr const char* name = "bitwise_right_shift";
  static constexpr BinaryRule rule = BinaryRule::Bitwise;
  template <class T> static T f(T a, T b) {
    if constexpr (int_like_v<T> && !std::is_same_v<T, bool>) {
      if (!shift_out_of_range(b)) return static_cast<T>(a >> b);
      if constexpr (std::is_signed_v<T>) return a < T(0) ? T(-1) : T(0);
      else return T(0);
    } else {
      return a;
    }
  }
};

// Activation derivatives fused into one pass: f(g, v) is the gradient g times the
// derivative at v (the input x for GELU and SiLU, the output y for the others). The unary
// ops' backward rules use them. Their own derivative: d/dg is the same op on the incoming
// gradient, d/dv is g * a * d'(v) (`second`), written with ops so higher derivatives work.
#define UG_ACTIVATION_GRAD(Name, opname, expr, second)                                                   \
  struct Name : ReadsOperands {                                                                          \
    static constexpr const char* name = opname;                                                          \
    static constexpr BinaryRule rule = BinaryRule::TrueDivide;                                           \
    template <class T> static T f(T g, T v) { return expr; }                                             \
    template <class Tn> static std::pair<Tn, Tn> vjp(const Tn& g, const Tn& a, const Tn& b, const Tn&) { \
      (void)a; /* relu's second half does not read it */                                                 \
      return {binary(BinaryOp::Name, g, b), second};                                                     \
    }                                                                                                    \
  };
// The entries hold expressions that clang-format would misread as declarations:
// clang-format off
UG_ACTIVATION_GRAD(ReluBackward, "relu_backward", v > T(0) ? g : T(0), zeros_like(b))
UG_ACTIVATION_GRAD(TanhBackward, "tanh_backward", g * (T(1) - v * v), g * a * b * -2)
UG_ACTIVATION_GRAD(SigmoidBackward, "sigmoid_backward", g * v * (T(1) - v), g * a * (1 - b * 2))
UG_ACTIVATION_GRAD(SiluBackward, "silu_backward",
                   g * (T(1) / (T(1) + std::exp(-v))) * (T(1) + v * (T(1) - T(1) / (T(1) + std::exp(-v)))),
                   g * a * b.sigmoid() * (1 - b.sigmoid()) * (2 + b * (1 - b.sigmoid() * 2)))
UG_ACTIVATION_GRAD(GeluBackward, "gelu_backward",
                   g * (T(0.5) * (T(1) + std::erf(v * T(0.70710678118654752440))) +
                        v * std::exp(T(-0.5) * v * v) * T(0.39894228040143267794)),
                   g * a * ((b * b * -0.5).exp() * 0.39894228040143267794) * (2 - b * b))
// clang-format on
#undef UG_ACTIVATION_GRAD

}  // namespace ug::ops
