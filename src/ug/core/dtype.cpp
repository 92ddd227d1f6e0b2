#include "ug/core/dtype.h"

#include <string>

#include "ug/core/error.h"

namespace ug {

size_t itemsize(DType t) {
  static constexpr size_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8};
  return sizes[static_cast<int>(t)];
}

std::string_view dtype_name(DType t) {
  static constexpr std::string_view names[] = {"bool",    "uint8",    "int32",   "int64",
                                               "float16", "bfloat16", "float32", "float64"};
  return names[static_cast<int>(t)];
}

DTypeCategory category(DType t) {
  switch (t) {
    case DType::Bool: return DTypeCategory::Bool;
    case DType::UInt8:
    case DType::Int32:
    case DType::Int64: return DTypeCategory::Integer;
    default: return DTypeCategory::Floating;
  }
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // Rows and columns in enum order: Bool UInt8 Int32 Int64 Float16 BFloat16 Float32 Float64.
  using D = DType;
  static constexpr D table[8][8] = {
      {D::Bool, D::UInt8, D::Int32, D::Int64, D::Float16, D::BFloat16, D::Float32, D::Float64},
      {D::UInt8, D::UInt8, D::Int32, D::Int64, D::Float16, D::BFloat16, D::Float32, D::Float64},
      {D::Int32, D::Int32, D::Int32, D::Int64, D::Float16, D::BFloat16, D::Float32, D::Float64},
      {D::Int64, D::Int64, D::Int64, D::Int64, D::Float16, D::BFloat16, D::Float32, D::Float64},
      {D::Float16, D::Float16, D::Float16, D::Float16, D::Float16, D::Float32, D::Float32, D::Float64},
      {D::BFloat16, D::BFloat16, D::BFloat16, D::BFloat16, D::Float32, D::BFloat16, D::Float32, D::Float64},
      {D::Float32, D::Float32, D::Float32, D::Float32, D::Float32, D::Float32, D::Float32, D::Float64},
      {D::Float64, D::Float64, D::Float64, D::Float64, D::Float64, D::Float64, D::Float64, D::Float64},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

DType to_floating(DType t) { return is_floating(t) ? t : DType::Float32; }

DType dtype_from_name(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias aliases[] = {
      {"bool", DType::Bool},       {"uint8", DType::UInt8},   {"int32", DType::Int32},
      {"int", DType::Int32},       {"int64", DType::Int64},   {"long", DType::Int64},
      {"float16", DType::Float16}, {"half", DType::Float16},  {"bfloat16", DType::BFloat16},
      {"float32", DType::Float32}, {"float", DType::Float32}, {"float64", DType::Float64},
      {"double", DType::Float64},
  };
  for (const auto& a : aliases)
    if (a.name == name) return a.dtype;
  fail<TypeError>("[dtype] unknown dtype '", name, "'");
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

}  // namespace ug
