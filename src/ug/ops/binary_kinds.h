// The elementwise binary ops: name, dtype rule and scalar math in one place, shared by
// every backend. Inputs are broadcast (NumPy rules) and promoted (PyTorch rules) first.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace ug::ops {

enum class BinaryRule : uint8_t {
  Arithmetic,  // result has the promoted dtype
  TrueDivide,  // integers are computed in float32
  Compare,     // computed in the promoted dtype, result is bool
  Bitwise,     // integers and bool only
};

template <class T>
inline constexpr bool int_like_v = std::is_integral_v<T>;

struct Add {
  static constexpr const char* name = "add";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else return a + b;
  }
};
struct Sub {
  static constexpr const char* name = "sub";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) { return static_cast<T>(a - b); }
};
struct Mul {
  static constexpr const char* name = "mul";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return a * b;
  }
};
struct Div {
  static constexpr const char* name = "div";
  static constexpr BinaryRule rule = BinaryRule::TrueDivide;
  template <class T> static T f(T a, T b) { return a / b; }
};
struct FloorDivide {  // Python's //: rounds toward minus infinity
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
};
struct Remainder {  // Python's %: the result has the sign of the divisor
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
};
struct Maximum {  // propagates NaN, like torch.maximum
  static constexpr const char* name = "maximum";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) { return (a != a) ? a : (b != b) ? b : (a > b ? a : b); }
};
struct Minimum {
  static constexpr const char* name = "minimum";
  static constexpr BinaryRule rule = BinaryRule::Arithmetic;
  template <class T> static T f(T a, T b) { return (a != a) ? a : (b != b) ? b : (a < b ? a : b); }
};
struct Atan2 {
  static constexpr const char* name = "atan2";
  static constexpr BinaryRule rule = BinaryRule::TrueDivide;
  template <class T> static T f(T a, T b) { return std::atan2(a, b); }
};

#define UG_COMPARE(Name, opname, expr)                     \
  struct Name {                                            \
    static constexpr const char* name = opname;            \
    static constexpr BinaryRule rule = BinaryRule::Compare; \
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

#define UG_BITWISE(Name, opname, op)                        \
  struct Name {                                             \
    static constexpr const char* name = opname;             \
    static constexpr BinaryRule rule = BinaryRule::Bitwise; \
    template <class T> static T f(T a, T b) {               \
      if constexpr (int_like_v<T>) return static_cast<T>(a op b); \
      else return a;                                        \
    }                                                       \
  };
UG_BITWISE(BitwiseAnd, "bitwise_and", &)
UG_BITWISE(BitwiseOr, "bitwise_or", |)
UG_BITWISE(BitwiseXor, "bitwise_xor", ^)
#undef UG_BITWISE

// Activation derivatives fused into one pass: f(g, v) is the gradient g times the
// derivative at v (the input x for GELU and SiLU, the output y for the others). The
// unary ops' backward rules use them; their own derivatives are in binary.cpp.
#define UG_ACTIVATION_GRAD(Name, opname, expr)                       \
  struct Name {                                                      \
    static constexpr const char* name = opname;                      \
    static constexpr BinaryRule rule = BinaryRule::TrueDivide;       \
    template <class T> static T f(T g, T v) { return expr; }         \
  };
UG_ACTIVATION_GRAD(ReluBackward, "relu_backward", v > T(0) ? g : T(0))
UG_ACTIVATION_GRAD(TanhBackward, "tanh_backward", g * (T(1) - v * v))
UG_ACTIVATION_GRAD(SigmoidBackward, "sigmoid_backward", g * v * (T(1) - v))
UG_ACTIVATION_GRAD(SiluBackward, "silu_backward",
                   g * (T(1) / (T(1) + std::exp(-v))) * (T(1) + v * (T(1) - T(1) / (T(1) + std::exp(-v)))))
UG_ACTIVATION_GRAD(GeluBackward, "gelu_backward",
                   g * (T(0.5) * (T(1) + std::erf(v * T(0.70710678118654752440))) +
                        v * std::exp(T(-0.5) * v * v) * T(0.39894228040143267794)))
#undef UG_ACTIVATION_GRAD

#define UG_BINARY_OPS(X)                                                                  \
  X(Add) X(Sub) X(Mul) X(Div) X(FloorDivide) X(Remainder) X(Pow) X(Maximum) X(Minimum)    \
  X(Atan2) X(Eq) X(Ne) X(Lt) X(Le) X(Gt) X(Ge) X(LogicalAnd) X(LogicalOr) X(LogicalXor)  \
  X(BitwiseAnd) X(BitwiseOr) X(BitwiseXor) X(ReluBackward) X(TanhBackward)                \
  X(SigmoidBackward) X(SiluBackward) X(GeluBackward)

enum class BinaryOp : uint8_t {
#define UG_ENUM(Op) Op,
  UG_BINARY_OPS(UG_ENUM)
#undef UG_ENUM
};

}  // namespace ug::ops
