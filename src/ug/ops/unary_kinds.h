// The elementwise unary ops, one entry each: its name, the ONNX op of the same meaning, its
// dtype rule, its scalar math (shared by every backend's loops; the CPU backend vectorises
// it), which of input and output its derivative reads, and the derivative itself. Everything
// else is generated from the lists at the end: the enum, the kernels, Tensor methods and free
// functions, the Python bindings, the ONNX export and import rows, the op table tests read.
// Adding a unary op is one entry here and one name in a list (docs/contributing.md).
//
// vjp(g, x, y) gives the input gradient from the output gradient g, the input x and the output
// y. It is a template only so that this header, which the kernels include, needs no Tensor:
// it is instantiated with Tensor in ops/unary.cpp. Written with ops, so it is differentiable
// itself; the forward-mode rule is the same expression with the tangent in place of g.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ug/ops/binary_kinds.h"

namespace ug::ops {

/** How a unary op's result dtype follows its input dtype. */
enum class UnaryRule : uint8_t {
  Same,        // result has the input dtype (bool rejected)
  SameOrBool,  // result has the input dtype, bool included
  Integral,    // result has the input dtype; bool is computed in int64 (like x ** 2)
  Floating,    // integers and bool are computed in float32
  Predicate,   // result is bool
  Bitwise,     // result has the input dtype; integers and bool only
};

/** What a unary op's derivative reads: only that is kept for backward (a kept tensor costs
 *  memory, and changing it in place makes backward refuse to run). */
enum class Reads : uint8_t { Nothing, Input, Output };

template <class T> inline constexpr bool is_int_v = std::is_integral_v<T>;

/** The derivative of a piecewise-constant op. */
struct ZeroGrad {
  static constexpr Reads reads = Reads::Nothing;
  template <class Tn> static Tn vjp(const Tn& g, const Tn&, const Tn&) { return zeros_like(g); }
};
/** No derivative: the result is bool. */
struct NoGrad {
  static constexpr Reads reads = Reads::Nothing;
  template <class Tn> static Tn vjp(const Tn&, const Tn&, const Tn&) { return Tn(); }
};

struct Neg {
  static constexpr const char* name = "neg";
  static constexpr const char* onnx = "Neg";
  static constexpr UnaryRule rule = UnaryRule::Same;
  static constexpr Reads reads = Reads::Nothing;
  template <class T> static T f(T x) { return -x; }
  template <class Tn> static Tn vjp(const Tn& g, const Tn&, const Tn&) { return -g; }
};
struct Abs {
  static constexpr const char* name = "abs";
  static constexpr const char* onnx = "Abs";
  static constexpr UnaryRule rule = UnaryRule::Same;
  static constexpr Reads reads = Reads::Input;
  template <class T> static T f(T x) {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? -x : x;
  }
  template <class Tn> static Tn vjp(const Tn& g, const Tn& x, const Tn&) { return g * x.sign(); }
};
struct Sign : ZeroGrad {
  static constexpr const char* name = "sign";
  static constexpr const char* onnx = "Sign";
  static constexpr UnaryRule rule = UnaryRule::SameOrBool;
  template <class T> static T f(T x) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x)) return T(0);  // torch.sign(nan) is 0
    return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};
struct Square {
  static constexpr const char* name = "square";
  static constexpr const char* onnx = nullptr;  // export_table.cpp: Mul(x, x)
  static constexpr UnaryRule rule = UnaryRule::Integral;
  static constexpr Reads reads = Reads::Input;
  template <class T> static T f(T x) { return x * x; }
  template <class Tn> static Tn vjp(const Tn& g, const Tn& x, const Tn&) { return g * x * 2; }
};
struct Relu {
  static constexpr const char* name = "relu";
  static constexpr const char* onnx = "Relu";
  static constexpr UnaryRule rule = UnaryRule::Same;
  static constexpr Reads reads = Reads::Output;
  template <class T> static T f(T x) { return x > T(0) ? x : (x != x ? x : T(0)); }
  template <class Tn> static Tn vjp(const Tn& g, const Tn&, const Tn& y) {
    return binary(BinaryOp::ReluBackward, g, y);
  }
};

// Rounding leaves integers as they are; ONNX's versions take floats only (export_table.cpp).
#define UG_ROUNDING_UNARY(Name, opname, expr)          \
  struct Name : ZeroGrad {                             \
    static constexpr const char* name = opname;        \
    static constexpr const char* onnx = nullptr;       \
    static constexpr UnaryRule rule = UnaryRule::Same; \
    template <class T> static T f(T x) {               \
      if constexpr (is_int_v<T>) return x;             \
      else return expr;                                \
    }                                                  \
  };
UG_ROUNDING_UNARY(Floor, "floor", std::floor(x))
UG_ROUNDING_UNARY(Ceil, "ceil", std::ceil(x))
UG_ROUNDING_UNARY(Round, "round", std::nearbyint(x))  // half to even, like torch.round and numpy.round
UG_ROUNDING_UNARY(Trunc, "trunc", std::trunc(x))
#undef UG_ROUNDING_UNARY

// Floating ops: integers and bool are computed in float32. onnx: the ONNX op of the same
// meaning, or nullptr where export_table.cpp builds the op from others.
#define UG_FLOAT_UNARY(Name, opname, onnx_name, what_vjp_reads, expr, derivative) \
  struct Name {                                                                   \
    static constexpr const char* name = opname;                                   \
    static constexpr const char* onnx = onnx_name;                                \
    static constexpr UnaryRule rule = UnaryRule::Floating;                        \
    static constexpr Reads reads = Reads::what_vjp_reads;                         \
    template <class T> static T f(T x) { return expr; }                           \
    template <class Tn> static Tn vjp(const Tn& g, const Tn& x, const Tn& y) {    \
      (void)x, (void)y;                                                           \
      return derivative;                                                          \
    }                                                                             \
  };
// The entries hold expressions that clang-format would misread as declarations:
// clang-format off
UG_FLOAT_UNARY(Exp, "exp", "Exp", Output, std::exp(x), g * y)
UG_FLOAT_UNARY(Exp2, "exp2", nullptr, Output, std::exp2(x), g * y * 0.69314718055994530942)
UG_FLOAT_UNARY(Log, "log", "Log", Input, std::log(x), g / x)
UG_FLOAT_UNARY(Log2, "log2", nullptr, Input, std::log2(x), g / (x * 0.69314718055994530942))
UG_FLOAT_UNARY(Log10, "log10", nullptr, Input, std::log10(x), g / (x * 2.30258509299404568402))
UG_FLOAT_UNARY(Log1p, "log1p", nullptr, Input, std::log1p(x), g / (x + 1))
UG_FLOAT_UNARY(Expm1, "expm1", nullptr, Output, std::expm1(x), g * (y + 1))
UG_FLOAT_UNARY(Sqrt, "sqrt", "Sqrt", Output, std::sqrt(x), g / (y * 2))
UG_FLOAT_UNARY(Rsqrt, "rsqrt", nullptr, Output, T(1) / std::sqrt(x), g * y * y * y * -0.5)
UG_FLOAT_UNARY(Reciprocal, "reciprocal", "Reciprocal", Output, T(1) / x, -g * y * y)
UG_FLOAT_UNARY(Sin, "sin", "Sin", Input, std::sin(x), g * x.cos())
UG_FLOAT_UNARY(Cos, "cos", "Cos", Input, std::cos(x), -g * x.sin())
UG_FLOAT_UNARY(Tan, "tan", "Tan", Output, std::tan(x), g * (y * y + 1))
UG_FLOAT_UNARY(Tanh, "tanh", "Tanh", Output, std::tanh(x), binary(BinaryOp::TanhBackward, g, y))
UG_FLOAT_UNARY(Sinh, "sinh", "Sinh", Input, std::sinh(x), g * x.cosh())
UG_FLOAT_UNARY(Cosh, "cosh", "Cosh", Input, std::cosh(x), g * x.sinh())
UG_FLOAT_UNARY(Asinh, "asinh", "Asinh", Input, std::asinh(x), g * (x * x + 1).rsqrt())
UG_FLOAT_UNARY(Asin, "asin", "Asin", Input, std::asin(x), g * (1 - x * x).rsqrt())
UG_FLOAT_UNARY(Acos, "acos", "Acos", Input, std::acos(x), -g * (1 - x * x).rsqrt())
UG_FLOAT_UNARY(Atan, "atan", "Atan", Input, std::atan(x), g / (x * x + 1))
UG_FLOAT_UNARY(Acosh, "acosh", "Acosh", Input, std::acosh(x), g * (x * x - 1).rsqrt())
UG_FLOAT_UNARY(Atanh, "atanh", "Atanh", Input, std::atanh(x), g / (1 - x * x))
UG_FLOAT_UNARY(Sigmoid, "sigmoid", "Sigmoid", Output, T(1) / (T(1) + std::exp(-x)),
               binary(BinaryOp::SigmoidBackward, g, y))
UG_FLOAT_UNARY(Silu, "silu", nullptr, Input, x / (T(1) + std::exp(-x)), binary(BinaryOp::SiluBackward, g, x))
UG_FLOAT_UNARY(Erf, "erf", "Erf", Input, std::erf(x), g * (-(x * x)).exp() * 1.12837916709551257390)
UG_FLOAT_UNARY(Gelu, "gelu", nullptr, Input, T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440))),
               binary(BinaryOp::GeluBackward, g, x))
// clang-format on
#undef UG_FLOAT_UNARY

struct GeluTanh {
  static constexpr const char* name = "gelu";  // gelu(approximate="tanh"): one name, told apart by an attribute
  static constexpr const char* onnx = nullptr;
  static constexpr UnaryRule rule = UnaryRule::Floating;
  static constexpr Reads reads = Reads::Input;
  template <class T> static T f(T x) {
    return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
  }
  template <class Tn> static Tn vjp(const Tn& g, const Tn& x, const Tn&) {
    constexpr double k = 0.79788456080286535588, c = 0.044715;
    Tn t = ((x + x * x * x * c) * k).tanh();
    return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * k * (x * x * (3 * c) + 1));
  }
};

struct IsNan : NoGrad {
  static constexpr const char* name = "isnan";
  static constexpr const char* onnx = "IsNaN";
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) {
    if constexpr (is_int_v<T>) return false;
    else return std::isnan(x);
  }
};
struct IsInf : NoGrad {
  static constexpr const char* name = "isinf";
  static constexpr const char* onnx = nullptr;  // ONNX's IsInf takes floats only
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) {
    if constexpr (is_int_v<T>) return false;
    else return std::isinf(x);
  }
};
struct IsFinite : NoGrad {
  static constexpr const char* name = "isfinite";
  static constexpr const char* onnx = nullptr;
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) {
    if constexpr (is_int_v<T>) return true;
    else return std::isfinite(x);
  }
};
struct LogicalNot : NoGrad {
  static constexpr const char* name = "logical_not";
  static constexpr const char* onnx = "Not";
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) { return x == T(0); }
};
struct BitwiseNot : NoGrad {
  static constexpr const char* name = "bitwise_not";
  static constexpr const char* onnx = "BitwiseNot";
  static constexpr UnaryRule rule = UnaryRule::Bitwise;
  template <class T> static T f(T x) {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else if constexpr (is_int_v<T>) return static_cast<T>(~x);
    else return x;
  }
};

// The lists. X(Entry, method): a Tensor method, its in-place form (method_) and a free
// function ug::method each. isnan, isinf and isfinite have no in-place form (as in torch);
// gelu's two entries are one function with an `approximate` argument.
// The op lists are laid out by hand, not by clang-format:
// clang-format off
#define UG_UNARY_MATH_OPS(X)                                                                   \
  X(Neg, neg) X(Abs, abs) X(Sign, sign) X(Square, square) X(Relu, relu) X(Floor, floor)        \
  X(Ceil, ceil) X(Round, round) X(Trunc, trunc) X(Exp, exp) X(Exp2, exp2) X(Log, log)          \
  X(Log2, log2) X(Log10, log10) X(Log1p, log1p) X(Expm1, expm1) X(Sqrt, sqrt) X(Rsqrt, rsqrt)  \
  X(Reciprocal, reciprocal) X(Sin, sin) X(Cos, cos) X(Tan, tan) X(Tanh, tanh) X(Sinh, sinh)    \
  X(Cosh, cosh) X(Asinh, asinh) X(Asin, asin) X(Acos, acos) X(Atan, atan) X(Acosh, acosh)      \
  X(Atanh, atanh)                                                                              \
  X(Sigmoid, sigmoid) X(Silu, silu) X(Erf, erf) X(LogicalNot, logical_not)                     \
  X(BitwiseNot, bitwise_not)
#define UG_UNARY_PREDICATES(X) X(IsNan, isnan) X(IsInf, isinf) X(IsFinite, isfinite)
#define UG_UNARY_GELU(X) X(Gelu, gelu) X(GeluTanh, gelu)

/** Every unary op: X(Entry, method). */
#define UG_UNARY_ALL(X) UG_UNARY_MATH_OPS(X) UG_UNARY_GELU(X) UG_UNARY_PREDICATES(X)
// clang-format on

enum class UnaryOp : uint8_t {
#define UG_ENUM(Op, method) Op,
  UG_UNARY_ALL(UG_ENUM)
#undef UG_ENUM
};

}  // namespace ug::ops
