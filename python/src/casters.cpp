#include "casters.h"

#include <string>

namespace ugpy {

namespace {
// Borrowed: the module's attributes (ug.float32, ...) own these objects.
nb::handle dtype_objects[ug::kNumDTypes];
}  // namespace

void register_dtype_object(ug::DType d, nb::handle obj) { dtype_objects[static_cast<int>(d)] = obj; }

ug::DType dtype_from_python(nb::handle h) {
  if (nb::isinstance<PyDType>(h)) return nb::cast<PyDType&>(h).value;
  if (nb::isinstance<nb::str>(h)) return ug::dtype_from_name(nb::cast<std::string>(h));
  // numpy dtypes and scalar types, torch dtypes: go by their name.
  nb::object name;
  if (nb::hasattr(h, "dtype") && nb::hasattr(h, "__name__")) name = h.attr("__name__");  // np.float32
  else if (nb::hasattr(h, "name")) name = h.attr("name");                                // np.dtype
  else if (nb::hasattr(h, "__name__")) name = h.attr("__name__");                        // float, int, bool
  if (name.is_valid() && nb::isinstance<nb::str>(name)) {
    std::string s = nb::cast<std::string>(name);
    if (s == "float") return ug::DType::Float32;
    if (s == "int") return ug::DType::Int64;
    return ug::dtype_from_name(s);
  }
  std::string text = nb::cast<std::string>(nb::str(h));
  if (text.rfind("torch.", 0) == 0) return ug::dtype_from_name(text.substr(6));
  ug::fail<ug::TypeError>("[dtype] cannot interpret ", text, " as a dtype");
}

ug::Device device_from_python(nb::handle h) {
  if (nb::isinstance<PyDevice>(h)) return nb::cast<PyDevice&>(h).value;
  if (nb::isinstance<nb::str>(h)) return ug::Device(nb::cast<std::string>(h));
  ug::fail<ug::TypeError>("[device] expected a device or a string like 'cpu', got ", nb::cast<std::string>(nb::str(h)));
}

bool scalar_from_python(nb::handle h, ug::Scalar& out) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) {
    out = ug::Scalar(o == Py_True);
    return true;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return false;
    out = ug::Scalar(static_cast<int64_t>(v));
    return true;
  }
  if (PyFloat_Check(o)) {
    out = ug::Scalar(PyFloat_AS_DOUBLE(o));
    return true;
  }
  if (PyComplex_Check(o)) {
    out = ug::Scalar(std::complex<double>(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
    return true;
  }
  // numpy scalars (np.float32(1.5), np.int64(3), np.bool_(True)) and 0-d numpy arrays.
  nb::handle type = h.type();
  if (!nb::hasattr(type, "__module__") || nb::cast<std::string>(type.attr("__module__")) != "numpy") return false;
  if (!nb::hasattr(h, "ndim") || nb::cast<int>(h.attr("ndim")) != 0) return false;
  std::string kind = nb::cast<std::string>(h.attr("dtype").attr("kind"));
  nb::object item = h.attr("item")();
  if (kind == "b") out = ug::Scalar(nb::cast<bool>(item));
  else if (kind == "i" || kind == "u") out = ug::Scalar(nb::cast<int64_t>(item));
  else if (kind == "f") out = ug::Scalar(nb::cast<double>(item));
  else if (kind == "c")
    out = ug::Scalar(std::complex<double>(nb::cast<double>(item.attr("real")), nb::cast<double>(item.attr("imag"))));
  else return false;
  return true;
}

std::string policy_name_from_python(nb::handle h) {
  if (h.is_none()) return "";
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::hasattr(h, "name") && !nb::isinstance<PyDType>(h)) return nb::cast<std::string>(h.attr("name"));
  return std::string(ug::dtype_name(dtype_from_python(h)));
}

ug::Dims dims_from_sequence(nb::handle h, const char* op) {
  ug::Dims dims;
  if (PyLong_Check(h.ptr())) {
    dims.push_back(nb::cast<int64_t>(h));
    return dims;
  }
  if (!nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
    ug::fail<ug::TypeError>("[", op, "] expected a sequence of ints, got ", nb::cast<std::string>(nb::str(h.type())));
  for (nb::handle item : nb::iter(h)) {
    if (!PyLong_Check(item.ptr()) && !nb::hasattr(item, "__index__"))
      ug::fail<ug::TypeError>("[", op, "] expected ints in the size, got ",
                              nb::cast<std::string>(nb::str(item.type())));
    dims.push_back(nb::cast<int64_t>(item.attr("__index__")()));
  }
  return dims;
}

std::optional<std::vector<double>> optional_factors(nb::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  if (PyNumber_Check(h.ptr()) && !nb::isinstance<nb::sequence>(h)) return std::vector<double>{nb::cast<double>(h)};
  if (!nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
    ug::fail<ug::TypeError>("[", op, "] expected a number or a sequence of numbers, got ",
                            nb::cast<std::string>(nb::str(h.type())));
  std::vector<double> values;
  for (nb::handle item : nb::iter(h)) values.push_back(nb::cast<double>(item));
  return values;
}

std::optional<ug::Dims> optional_sizes(nb::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  return dims_from_sequence(h, op);
}

ug::Dims dims_from_args(const nb::args& args, const char* op) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return dims_from_sequence(args[0], op);
  ug::Dims dims;
  for (nb::handle item : args) {
    if (!PyLong_Check(item.ptr()) && !nb::hasattr(item, "__index__"))
      ug::fail<ug::TypeError>("[", op, "] size must be ints, got ", nb::cast<std::string>(nb::str(item.type())));
    dims.push_back(nb::cast<int64_t>(item.attr("__index__")()));
  }
  return dims;
}

}  // namespace ugpy

namespace nanobind::detail {

handle type_caster<ug::DType>::from_cpp(ug::DType d, rv_policy, cleanup_list*) noexcept {
  return ugpy::dtype_objects[static_cast<int>(d)].inc_ref();
}

handle type_caster<ug::Device>::from_cpp(const ug::Device& d, rv_policy, cleanup_list*) noexcept {
  return nb::cast(ugpy::PyDevice{d}).release();
}

}  // namespace nanobind::detail
