#include "ug/core/type_info.h"

#include <cmath>
#include <limits>

#include "ug/core/error.h"

namespace ug {

namespace {

template <class T> FloatInfo float_info(int bits, double resolution) {
  using L = std::numeric_limits<T>;
  return {bits, double(L::epsilon()), double(L::max()), -double(L::max()), double(L::min()), resolution};
}

template <class T> IntInfo int_info() {
  using L = std::numeric_limits<T>;
  return {static_cast<int>(sizeof(T) * 8), static_cast<int64_t>(L::min()), static_cast<uint64_t>(L::max())};
}

}  // namespace

FloatInfo finfo(DType t) {
  switch (t) {
    case DType::Float64: return float_info<double>(64, 1e-15);
    case DType::Float32: return float_info<float>(32, 1e-6);
    // IEEE half: 10 fraction bits, exponents -14..15.
    case DType::Float16: return {16, std::ldexp(1.0, -10), 65504.0, -65504.0, std::ldexp(1.0, -14), 1e-3};
    // bfloat16: float32's exponent range with 7 fraction bits.
    case DType::BFloat16: {
      const double max = std::ldexp(255.0 / 128.0, 127);
      return {16, std::ldexp(1.0, -7), max, -max, double(std::numeric_limits<float>::min()), 1e-2};
    }
    default: fail<TypeError>("[finfo] expects a floating dtype, got ", t);
  }
}

IntInfo iinfo(DType t) {
  switch (t) {
    case DType::UInt8: return int_info<uint8_t>();
    case DType::Int8: return int_info<int8_t>();
    case DType::Int16: return int_info<int16_t>();
    case DType::UInt16: return int_info<uint16_t>();
    case DType::Int32: return int_info<int32_t>();
    case DType::UInt32: return int_info<uint32_t>();
    case DType::Int64: return int_info<int64_t>();
    case DType::UInt64: return int_info<uint64_t>();
    default: fail<TypeError>("[iinfo] expects an integer dtype, got ", t);
  }
}

}  // namespace ug
