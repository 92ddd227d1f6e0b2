// Element types, their sizes and names, and PyTorch's type promotion.
#pragma once

#include <complex>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "ug/core/half.h"

namespace ug {

// New dtypes go at the end: the values are stable (hashes, tables indexed by them).
// UInt16, UInt32 and UInt64 are shells, as in PyTorch: storage, casts, creation and views only.
enum class DType : uint8_t {
  Bool,
  UInt8,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Int8,
  Int16,
  UInt16,
  UInt32,
  UInt64,
  Complex64,
  Complex128
};
inline constexpr int kNumDTypes = 15;

/** Bool < integer < floating < complex: the categories PyTorch's promotion works in. */
enum class DTypeCategory : uint8_t { Bool, Integer, Floating, Complex };

size_t itemsize(DType t);
std::string_view dtype_name(DType t);  // "float32", ...
DTypeCategory category(DType t);
inline bool is_floating(DType t) { return category(t) == DTypeCategory::Floating; }
inline bool is_complex(DType t) { return category(t) == DTypeCategory::Complex; }
/** Floating or complex: the dtypes that carry gradients. */
inline bool is_inexact(DType t) { return is_floating(t) || is_complex(t); }
/** The real dtype of a complex one's parts (complex64 -> float32); other dtypes unchanged. */
DType to_real(DType t);
/** The complex dtype whose parts have dtype t (float32 -> complex64, float64 -> complex128);
 *  a complex dtype unchanged; float16/bfloat16 and non-floating dtypes throw TypeError. */
DType to_complex(DType t);
/** uint16, uint32, uint64: no arithmetic, no promotion with other integer dtypes (as PyTorch). */
inline bool is_shell(DType t) { return t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64; }
inline bool is_integral(DType t, bool include_bool = false) {
  return category(t) == DTypeCategory::Integer || (include_bool && t == DType::Bool);
}
/** The result type of combining two tensors of these dtypes (torch.promote_types); a shell
 *  dtype with another integer or bool dtype throws TypeError, as in PyTorch. */
DType promote_types(DType a, DType b);
/** Whether type promotion may cast from to to (torch.can_cast): never floating to integer, nor
 *  anything but bool to bool; narrowing within a category is allowed. */
bool can_cast(DType from, DType to);
/** The dtype a float result takes for an input of dtype t: t if floating or complex (an op
 *  without a complex form then refuses it), else the default. */
DType to_floating(DType t);
/** The floating dtype of new tensors that name none (factories, Python floats, parameters) and
 *  of float results from integers: float32 unless set_default_dtype changed it. Process-wide,
 *  as torch.set_default_dtype. */
DType get_default_dtype();
/** The dtype a tensor of Python numbers of this category gets: bool, int64, the default floating
 *  dtype, or the complex dtype with parts of that (complex64 by default), as torch.tensor. */
DType default_dtype_for(DTypeCategory c);
/** torch.set_default_dtype: float32, float64, float16 or bfloat16; anything else is a TypeError. */
void set_default_dtype(DType t);
/** Parses "float32", "float", "int64", "long", ... Throws TypeError for unknown names. */
DType dtype_from_name(std::string_view name);

std::ostream& operator<<(std::ostream& os, DType t);

template <class T> struct DTypeOf;
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::UInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::UInt64; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<std::complex<float>> { static constexpr DType value = DType::Complex64; };
template <> struct DTypeOf<std::complex<double>> { static constexpr DType value = DType::Complex128; };
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

/** The type arithmetic on T is carried out in: float for the 16-bit floats. */
template <class T> struct AccOf { using type = T; };
template <> struct AccOf<Half> { using type = float; };
template <> struct AccOf<BFloat16> { using type = float; };
template <class T> using acc_t = typename AccOf<T>::type;

template <class T> inline constexpr bool is_complex_v = false;
template <class T> inline constexpr bool is_complex_v<std::complex<T>> = true;

/** An element's value as a complex double (real dtypes: no imaginary part), for printing and item(). */
template <class T> std::complex<double> to_complex_double(T v) {
  if constexpr (is_complex_v<T>) return std::complex<double>(v);
  else return static_cast<double>(static_cast<acc_t<T>>(v));
}

}  // namespace ug

// Calls BODY with `scalar_t` bound to the C++ type of DTYPE, for the listed kinds.
#define UG_DTYPE_CASE(ENUM, TYPE, ...) \
  case ::ug::DType::ENUM: {            \
    using scalar_t = TYPE;             \
    __VA_ARGS__;                       \
    break;                             \
  }

#define UG_DISPATCH_FAIL(DTYPE, NAME) ::ug::fail<::ug::TypeError>("[", NAME, "] not implemented for dtype ", DTYPE)

// One switch, cut to the dtypes a kernel takes: each dispatch below is a subset of these cases.
#define UG_FLOATING_CASES(...)                    \
  UG_DTYPE_CASE(Float32, float, __VA_ARGS__)      \
  UG_DTYPE_CASE(Float64, double, __VA_ARGS__)     \
  UG_DTYPE_CASE(Float16, ::ug::Half, __VA_ARGS__) \
  UG_DTYPE_CASE(BFloat16, ::ug::BFloat16, __VA_ARGS__)
#define UG_INTEGRAL_CASES(...)               \
  UG_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__) \
  UG_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)   \
  UG_DTYPE_CASE(Int16, int16_t, __VA_ARGS__) \
  UG_DTYPE_CASE(Int32, int32_t, __VA_ARGS__) \
  UG_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)
#define UG_SHELL_CASES(...)                    \
  UG_DTYPE_CASE(UInt16, uint16_t, __VA_ARGS__) \
  UG_DTYPE_CASE(UInt32, uint32_t, __VA_ARGS__) \
  UG_DTYPE_CASE(UInt64, uint64_t, __VA_ARGS__)

#define UG_COMPLEX_CASES(...)                                \
  UG_DTYPE_CASE(Complex64, std::complex<float>, __VA_ARGS__) \
  UG_DTYPE_CASE(Complex128, std::complex<double>, __VA_ARGS__)

#define UG_DISPATCH_FLOATING(DTYPE, NAME, ...) \
  switch (DTYPE) {                             \
    UG_FLOATING_CASES(__VA_ARGS__)             \
    default: UG_DISPATCH_FAIL(DTYPE, NAME);    \
  }

/** Every dtype but bool. */
#define UG_DISPATCH_NUMERIC(DTYPE, NAME, ...) \
  switch (DTYPE) {                            \
    UG_INTEGRAL_CASES(__VA_ARGS__)            \
    UG_FLOATING_CASES(__VA_ARGS__)            \
    default: UG_DISPATCH_FAIL(DTYPE, NAME);   \
  }

#define UG_DISPATCH_INTEGRAL_AND_BOOL(DTYPE, NAME, ...) \
  switch (DTYPE) {                                      \
    UG_DTYPE_CASE(Bool, bool, __VA_ARGS__)              \
    UG_INTEGRAL_CASES(__VA_ARGS__)                      \
    default: UG_DISPATCH_FAIL(DTYPE, NAME);             \
  }

#define UG_DISPATCH_ALL(DTYPE, NAME, ...)   \
  switch (DTYPE) {                          \
    UG_DTYPE_CASE(Bool, bool, __VA_ARGS__)  \
    UG_INTEGRAL_CASES(__VA_ARGS__)          \
    UG_FLOATING_CASES(__VA_ARGS__)          \
    default: UG_DISPATCH_FAIL(DTYPE, NAME); \
  }

/** Floating and complex dtypes. */
#define UG_DISPATCH_INEXACT(DTYPE, NAME, ...) \
  switch (DTYPE) {                            \
    UG_FLOATING_CASES(__VA_ARGS__)            \
    UG_COMPLEX_CASES(__VA_ARGS__)             \
    default: UG_DISPATCH_FAIL(DTYPE, NAME);   \
  }

/** complex64 and complex128 only. */
#define UG_DISPATCH_COMPLEX(DTYPE, NAME, ...) \
  switch (DTYPE) {                            \
    UG_COMPLEX_CASES(__VA_ARGS__)             \
    default: UG_DISPATCH_FAIL(DTYPE, NAME);   \
  }

/** Every dtype, the shells and complex included: for the kernels every dtype has (copy, fill,
 *  printing, item). */
#define UG_DISPATCH_ALL_AND_SHELLS(DTYPE, NAME, ...) \
  switch (DTYPE) {                                   \
    UG_DTYPE_CASE(Bool, bool, __VA_ARGS__)           \
    UG_INTEGRAL_CASES(__VA_ARGS__)                   \
    UG_SHELL_CASES(__VA_ARGS__)                      \
    UG_FLOATING_CASES(__VA_ARGS__)                   \
    UG_COMPLEX_CASES(__VA_ARGS__)                    \
    default: UG_DISPATCH_FAIL(DTYPE, NAME);          \
  }
