// How Python values become C++ arguments: dtypes (ug.float32, "float32", numpy dtypes),
// devices ("cpu", ug.device(...)), Python numbers (ug::Scalar) and sizes (2, 3 or (2, 3)).
#pragma once

#include <nanobind/nanobind.h>

#include "ug/ug.h"

namespace nb = nanobind;

namespace ugpy {

/** The Python-visible dtype object: ug.float32 is a PyDType. */
struct PyDType {
  ug::DType value;
};
/** The Python-visible device object: ug.device("cpu"). */
struct PyDevice {
  ug::Device value;
};

ug::DType dtype_from_python(nb::handle h);
/** Remembers the module-owned Python object for a dtype (returned for tensor.dtype). */
void register_dtype_object(ug::DType d, nb::handle obj);
ug::Device device_from_python(nb::handle h);
bool scalar_from_python(nb::handle h, ug::Scalar& out);
/** torch-style size arguments: f(2, 3), f((2, 3)), f([2, 3]), f(ug.Size). */
ug::Dims dims_from_args(const nb::args& args, const char* op);
ug::Dims dims_from_sequence(nb::handle h, const char* op);
/** Keras's dtype= of a layer as a policy name: None (""), a name, a ug dtype or a Policy. */
std::string policy_name_from_python(nb::handle h);
/** torch's size= and scale_factor= of interpolate and Upsample: None, one value or a sequence. */
std::optional<ug::Dims> optional_sizes(nb::handle h, const char* op);
std::optional<std::vector<double>> optional_factors(nb::handle h, const char* op);

}  // namespace ugpy

namespace nanobind::detail {

template <> struct type_caster<ug::DType> {
  NB_TYPE_CASTER(ug::DType, const_name("unigrad.dtype"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    try {
      value = ugpy::dtype_from_python(src);
      return true;
    } catch (...) {
      return false;
    }
  }
  static handle from_cpp(ug::DType d, rv_policy, cleanup_list*) noexcept;
};

template <> struct type_caster<ug::Device> {
  NB_TYPE_CASTER(ug::Device, const_name("unigrad.device"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    try {
      value = ugpy::device_from_python(src);
      return true;
    } catch (...) {
      return false;
    }
  }
  static handle from_cpp(const ug::Device& d, rv_policy, cleanup_list*) noexcept;
};

template <> struct type_caster<ug::Scalar> {
  NB_TYPE_CASTER(ug::Scalar, const_name("bool | int | float | complex"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept { return ugpy::scalar_from_python(src, value); }
  static handle from_cpp(const ug::Scalar& s, rv_policy, cleanup_list*) noexcept {
    if (s.is_bool()) return PyBool_FromLong(s.to_bool());
    if (s.is_floating()) return PyFloat_FromDouble(s.to_double());
    if (s.is_complex()) return PyComplex_FromDoubles(s.to_complex().real(), s.to_complex().imag());
    return PyLong_FromLongLong(s.to_int());
  }
};

}  // namespace nanobind::detail
