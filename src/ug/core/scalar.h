// A Python-like number: bool, integer, floating or complex. Ops take scalars where PyTorch takes them
// (x + 2, clamp(x, 0, 1), full(shape, 3.5)); their dtype follows PyTorch's scalar rules.
#pragma once

#include <complex>
#include <cstdint>
#include <ostream>

#include "ug/core/dtype.h"
#include "ug/core/error.h"

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
  template <class T> Scalar(std::complex<T> v) : kind_(DTypeCategory::Complex), d_(v.real()), imag_(v.imag()) {}

  DTypeCategory category() const { return kind_; }
  bool is_floating() const { return kind_ == DTypeCategory::Floating; }
  bool is_complex() const { return kind_ == DTypeCategory::Complex; }
  bool is_bool() const { return kind_ == DTypeCategory::Bool; }
  /** The value as a real number; a complex scalar is a TypeError here, as float(1j) is in Python. */
  double to_double() const {
    if (is_complex()) [[unlikely]]
      fail<TypeError>("a complex number (", d_, imag_ >= 0 ? "+" : "", imag_, "j) where a real number is expected");
    return is_floating() ? d_ : static_cast<double>(i_);
  }
  int64_t to_int() const { return is_floating() || is_complex() ? static_cast<int64_t>(to_double()) : i_; }
  bool to_bool() const { return is_complex() ? d_ != 0.0 || imag_ != 0.0 : is_floating() ? d_ != 0.0 : i_ != 0; }
  std::complex<double> to_complex() const { return is_complex() ? std::complex<double>(d_, imag_) : to_double(); }
  /** The dtype a tensor made from this scalar gets: bool, int64, the default floating dtype, or
   *  the complex dtype whose parts have the default floating dtype (complex64 by default). */
  DType default_dtype() const { return default_dtype_for(kind_); }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_int());
    else if constexpr (is_complex_v<T>) return T(to_complex());
    else return static_cast<T>(static_cast<acc_t<T>>(to_double()));
  }

 private:
  DTypeCategory kind_;
  union {
    int64_t i_;
    double d_;  // the real part of a complex scalar
  };
  double imag_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace ug
