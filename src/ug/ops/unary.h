// The elementwise unary ops: for each, its name, its dtype rule and its scalar math. The
// math is shared by every backend's loops (the CPU backend vectorises it), so an op is
// defined here once. The Tensor methods and free functions are generated from the list.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ug/core/tensor.h"

namespace ug::ops {

/** How a unary op's result dtype follows its input dtype. */
enum class UnaryRule : uint8_t {
  Same,       // result has the input dtype (bool rejected)
  SameOrBool, // result has the input dtype, bool included
  Integral,   // result has the input dtype; bool is computed in int64 (like x ** 2)
  Floating,   // integers and bool are computed in float32
  Predicate,  // result is bool
};

template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T>;

struct Neg {
  static constexpr const char* name = "neg";
  static constexpr UnaryRule rule = UnaryRule::Same;
  template <class T> static T f(T x) { return -x; }
};
struct Abs {
  static constexpr const char* name = "abs";
  static constexpr UnaryRule rule = UnaryRule::Same;
  template <class T> static T f(T x) {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? -x : x;
  }
};
struct Sign {
  static constexpr const char* name = "sign";
  static constexpr UnaryRule rule = UnaryRule::SameOrBool;
  template <class T> static T f(T x) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x)) return T(0);  // torch.sign(nan) is 0
    return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};
struct Square {
  static constexpr const char* name = "square";
  static constexpr UnaryRule rule = UnaryRule::Integral;
  template <class T> static T f(T x) { return x * x; }
};
struct Relu {
  static constexpr const char* name = "relu";
  static constexpr UnaryRule rule = UnaryRule::Same;
  template <class T> static T f(T x) { return x > T(0) ? x : (x != x ? x : T(0)); }
};
struct Floor {
  static constexpr const char* name = "floor";
  static constexpr UnaryRule rule = UnaryRule::Same;
  template <class T> static T f(T x) {
    if constexpr (is_int_v<T>) return x;
    else return std::floor(x);
  }
};
struct Ceil {
  static constexpr const char* name = "ceil";
  static constexpr UnaryRule rule = UnaryRule::Same;
  template <class T> static T f(T x) {
    if constexpr (is_int_v<T>) return x;
    else return std::ceil(x);
  }
};
struct Round {  // half to even, like torch.round and numpy.round
  static constexpr const char* name = "round";
  static constexpr UnaryRule rule = UnaryRule::Same;
  template <class T> static T f(T x) {
    if constexpr (is_int_v<T>) return x;
    else return std::nearbyint(x);
  }
};
struct Trunc {
  static constexpr const char* name = "trunc";
  static constexpr UnaryRule rule = UnaryRule::Same;
  template <class T> static T f(T x) {
    if constexpr (is_int_v<T>) return x;
    else return std::trunc(x);
  }
};

#define UG_FLOAT_UNARY(Name, opname, expr)                   \
  struct Name {                                              \
    static constexpr const char* name = opname;              \
    static constexpr UnaryRule rule = UnaryRule::Floating;   \
    template <class T> static T f(T x) { return expr; }      \
  };
UG_FLOAT_UNARY(Exp, "exp", std::exp(x))
UG_FLOAT_UNARY(Exp2, "exp2", std::exp2(x))
UG_FLOAT_UNARY(Log, "log", std::log(x))
UG_FLOAT_UNARY(Log2, "log2", std::log2(x))
UG_FLOAT_UNARY(Log10, "log10", std::log10(x))
UG_FLOAT_UNARY(Log1p, "log1p", std::log1p(x))
UG_FLOAT_UNARY(Expm1, "expm1", std::expm1(x))
UG_FLOAT_UNARY(Sqrt, "sqrt", std::sqrt(x))
UG_FLOAT_UNARY(Rsqrt, "rsqrt", T(1) / std::sqrt(x))
UG_FLOAT_UNARY(Reciprocal, "reciprocal", T(1) / x)
UG_FLOAT_UNARY(Sin, "sin", std::sin(x))
UG_FLOAT_UNARY(Cos, "cos", std::cos(x))
UG_FLOAT_UNARY(Tan, "tan", std::tan(x))
UG_FLOAT_UNARY(Tanh, "tanh", std::tanh(x))
UG_FLOAT_UNARY(Sigmoid, "sigmoid", T(1) / (T(1) + std::exp(-x)))
UG_FLOAT_UNARY(Silu, "silu", x / (T(1) + std::exp(-x)))
UG_FLOAT_UNARY(Erf, "erf", std::erf(x))
UG_FLOAT_UNARY(Gelu, "gelu", T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440))))
UG_FLOAT_UNARY(GeluTanh, "gelu",
               T(0.5) * x *
                   (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))))
#undef UG_FLOAT_UNARY

struct IsNan {
  static constexpr const char* name = "isnan";
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) {
    if constexpr (is_int_v<T>) return false;
    else return std::isnan(x);
  }
};
struct IsInf {
  static constexpr const char* name = "isinf";
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) {
    if constexpr (is_int_v<T>) return false;
    else return std::isinf(x);
  }
};
struct IsFinite {
  static constexpr const char* name = "isfinite";
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) {
    if constexpr (is_int_v<T>) return true;
    else return std::isfinite(x);
  }
};
struct LogicalNot {
  static constexpr const char* name = "logical_not";
  static constexpr UnaryRule rule = UnaryRule::Predicate;
  template <class T> static bool f(T x) { return x == T(0); }
};

// Every unary op, in one list: enum values, backend kernels and bindings come from here.
#define UG_UNARY_OPS(X)                                                                      \
  X(Neg) X(Abs) X(Sign) X(Square) X(Relu) X(Floor) X(Ceil) X(Round) X(Trunc) X(Exp) X(Exp2)  \
  X(Log) X(Log2) X(Log10) X(Log1p) X(Expm1) X(Sqrt) X(Rsqrt) X(Reciprocal) X(Sin) X(Cos)     \
  X(Tan) X(Tanh) X(Sigmoid) X(Silu) X(Erf) X(Gelu) X(GeluTanh) X(IsNan) X(IsInf) X(IsFinite) \
  X(LogicalNot)

enum class UnaryOp : uint8_t {
#define UG_ENUM(Op) Op,
  UG_UNARY_OPS(UG_ENUM)
#undef UG_ENUM
};

/** Applies a unary op: the dtype rule, then the device's kernel. */
Tensor unary(UnaryOp op, const Tensor& x);
/** The same op written into `out` (which may be x itself, for the in-place forms). */
void unary_out(UnaryOp op, const Tensor& x, const Tensor& out);

}  // namespace ug::ops

namespace ug {
// Free functions, as in torch::exp(x).
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor logical_not(const Tensor& x);
}  // namespace ug
