// A Python-like number: bool, integer or floating. Ops take scalars where PyTorch takes them
// (x + 2, clamp(x, 0, 1), full(shape, 3.5)); their dtype follows PyTorch's scalar rules.
#pragma once

#include <cstdint>
#include <ostream>

#include "ug/core/dtype.h"

namespace ug {

class Scalar {
 public:
  Scalar() : kind_(DTypeCategory::Integer), i_(0) {}
  Scalar(bool v) : kind_(DTypeCategory::Bool), i_(v) {}
  Scalar(int v) : kind_(DTypeCategory::Integer), i_(v) {}
  Scalar(long v) : kind_(DTypeCategory::Integer), i_(v) {}
  Scalar(long long v) : kind_(DTypeCategory::Integer), i_(static_cast<int64_t>(v)) {}
  Scalar(unsigned v) : kind_(DTypeCategory::Integer), i_(v) {}
  Scalar(float v) : kind_(DTypeCategory::Floating), d_(v) {}
  Scalar(double v) : kind_(DTypeCategory::Floating), d_(v) {}

  DTypeCategory category() const { return kind_; }
  bool is_floating() const { return kind_ == DTypeCategory::Floating; }
  bool is_bool() const { return kind_ == DTypeCategory::Bool; }
  double to_double() const { return is_floating() ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return is_floating() ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return is_floating() ? d_ != 0.0 : i_ != 0; }
  /** The dtype a tensor made from this scalar gets: bool, int64 or the default floating dtype. */
  DType default_dtype() const {
    return kind_ == DTypeCategory::Bool      ? DType::Bool
           : kind_ == DTypeCategory::Integer ? DType::Int64
                                             : get_default_dtype();
  }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_int());
    else return static_cast<T>(static_cast<acc_t<T>>(to_double()));
  }

 private:
  DTypeCategory kind_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace ug
