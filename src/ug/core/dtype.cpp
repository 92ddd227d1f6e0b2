#include "ug/core/dtype.h"

#include <atomic>
#include <string>

#include "ug/core/error.h"

namespace ug {

size_t itemsize(DType t) {
  static constexpr size_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8, 1, 2, 2, 4, 8, 8, 16};
  return sizes[static_cast<int>(t)];
}

std::string_view dtype_name(DType t) {
  static constexpr std::string_view names[] = {"bool",     "uint8",   "int32",   "int64",     "float16",
                                               "bfloat16", "float32", "float64", "int8",      "int16",
                                               "uint16",   "uint32",  "uint64",  "complex64", "complex128"};
  return names[static_cast<int>(t)];
}

DTypeCategory category(DType t) {
  switch (t) {
    case DType::Bool: return DTypeCategory::Bool;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64: return DTypeCategory::Floating;
    case DType::Complex64:
    case DType::Complex128: return DTypeCategory::Complex;
    default: return DTypeCategory::Integer;
  }
}

namespace {

/** PyTorch's promotion among bool and the signed and 8-bit integers: the wider type wins,
 *  and uint8 with int8 meets in int16. */
DType promote_integers(DType a, DType b) {
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if ((a == DType::UInt8 && b == DType::Int8) || (a == DType::Int8 && b == DType::UInt8)) return DType::Int16;
  if (a == DType::UInt8) return itemsize(b) > 1 ? b : a;
  if (b == DType::UInt8) return itemsize(a) > 1 ? a : b;
  return itemsize(a) >= itemsize(b) ? a : b;
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_complex(a) || is_complex(b)) {
    if (is_shell(a) || is_shell(b))
      fail<TypeError>(
          "[promote_types] promotion for uint16, uint32, uint64 types is not supported, attempted to promote ", a,
          " and ", b);
    // the parts take the wider of the real dtypes: complex64 with float64 gives complex128
    const DType ra = is_inexact(a) ? to_real(a) : DType::Float32, rb = is_inexact(b) ? to_real(b) : DType::Float32;
    return ra == DType::Float64 || rb == DType::Float64 ? DType::Complex128 : DType::Complex64;
  }
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  if (is_shell(a) || is_shell(b))
    fail<TypeError>(
        "[promote_types] promotion for uint16, uint32, uint64 types is not supported, attempted to promote ", a,
        " and ", b);
  return promote_integers(a, b);
}

bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && is_integral(to)) return false;
  return from == DType::Bool || to != DType::Bool;
}

namespace {
std::atomic<DType> default_dtype{DType::Float32};
}  // namespace

DType get_default_dtype() { return default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(DType t) {
  if (!is_floating(t))
    fail<TypeError>("[set_default_dtype] only floating-point types are supported as the default type, got ", t);
  default_dtype.store(t, std::memory_order_relaxed);
}

DType default_dtype_for(DTypeCategory c) {
  switch (c) {
    case DTypeCategory::Bool: return DType::Bool;
    case DTypeCategory::Integer: return DType::Int64;
    case DTypeCategory::Floating: return get_default_dtype();
    default: return get_default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64;
  }
}

DType to_floating(DType t) { return is_inexact(t) ? t : get_default_dtype(); }

DType to_real(DType t) {
  if (t == DType::Complex64) return DType::Float32;
  if (t == DType::Complex128) return DType::Float64;
  return t;
}

DType to_complex(DType t) {
  if (is_complex(t)) return t;
  if (t == DType::Float32) return DType::Complex64;
  if (t == DType::Float64) return DType::Complex128;
  fail<TypeError>("[complex] no complex dtype has parts of dtype ", t, " (float32 and float64 only)");
}

DType dtype_from_name(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias aliases[] = {
      {"bool", DType::Bool},          {"uint8", DType::UInt8},
      {"int8", DType::Int8},          {"int16", DType::Int16},
      {"short", DType::Int16},        {"uint16", DType::UInt16},
      {"uint32", DType::UInt32},      {"uint64", DType::UInt64},
      {"int32", DType::Int32},        {"int", DType::Int32},
      {"int64", DType::Int64},        {"long", DType::Int64},
      {"float16", DType::Float16},    {"half", DType::Float16},
      {"bfloat16", DType::BFloat16},  {"float32", DType::Float32},
      {"float", DType::Float32},      {"float64", DType::Float64},
      {"double", DType::Float64},     {"complex64", DType::Complex64},
      {"cfloat", DType::Complex64},   {"complex128", DType::Complex128},
      {"cdouble", DType::Complex128},
  };
  for (const auto& a : aliases)
    if (a.name == name) return a.dtype;
  fail<TypeError>("[dtype] unknown dtype '", name, "'");
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

}  // namespace ug
