#include "data_python.h"

#include <map>
#include <mutex>

#include "convert.h"
#include "ug/core/random.h"

namespace ugpy {

namespace {

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(h.type().attr("__name__")); }

/** A field's value as a tensor; `field` names it in errors ("0", "'label'"). */
ug::Tensor field_from_python(nb::handle h, const char* op, const std::string& field) {
  if (nb::isinstance<ug::Tensor>(h)) return nb::cast<ug::Tensor>(h);
  if (PyBool_Check(h.ptr())) return ug::scalar_tensor(h.ptr() == Py_True, {.dtype = ug::DType::Bool});
  if (PyLong_Check(h.ptr())) return ug::scalar_tensor(nb::cast<int64_t>(h), {.dtype = ug::DType::Int64});
  if (PyFloat_Check(h.ptr())) return ug::scalar_tensor(nb::cast<double>(h), {.dtype = ug::DType::Float64});
  if (nb::hasattr(h, "__array_interface__")) return tensor_from_data(h, std::nullopt, std::nullopt);
  ug::fail<ug::TypeError>("[", op, "] field ", field, " is a ", py_type_name(h),
                          "; expected tensors, numbers or NumPy arrays (or a tuple or dict of them)");
}

struct Registry {
  std::mutex mu;
  std::map<const void*, std::function<void()>> stops;
};

Registry& registry() {
  static auto* r = new Registry();  // outlives the interpreter's exit hooks
  return *r;
}

}  // namespace

ug::data::Example example_from_python(nb::handle value, const char* op, bool* single) {
  const bool sequence = nb::isinstance<nb::tuple>(value) || nb::isinstance<nb::list>(value);
  const bool dict = PyDict_Check(value.ptr());
  if (single) *single = !sequence && !dict;
  ug::data::Example out;
  if (dict) {
    for (auto [key, field] : nb::borrow<nb::dict>(value)) {
      if (!PyUnicode_Check(key.ptr()))
        ug::fail<ug::TypeError>("[", op, "] a dict's keys name its fields and must be strings, got a ",
                                py_type_name(key));
      const std::string name = nb::cast<std::string>(key);
      out.push_back(field_from_python(field, op, "'" + name + "'"));
      out.names.push_back(name);
    }
  } else if (sequence) {
    size_t i = 0;
    for (nb::handle field : value) out.push_back(field_from_python(field, op, std::to_string(i++)));
  } else {
    out.push_back(field_from_python(value, op, "0"));
  }
  if (out.empty()) ug::fail("[", op, "] expected at least one field, got an empty ", py_type_name(value));
  return out;
}

nb::object default_convert(nb::handle data) {
  if (nb::isinstance<ug::Tensor>(data)) return nb::borrow(data);
  // NumPy arrays (not of strings or objects) and scalars, as torch.as_tensor takes them
  nb::handle type = data.type();
  if (nb::hasattr(type, "__module__") && nb::cast<std::string>(nb::str(type.attr("__module__"))) == "numpy" &&
      nb::hasattr(data, "__array_interface__") && nb::hasattr(data, "dtype") &&
      nb::cast<std::string>(nb::str(data.attr("dtype").attr("kind"))).find_first_of("OSUV") == std::string::npos)
    return nb::cast(tensor_from_data(data, std::nullopt, std::nullopt));
  if (PyDict_Check(data.ptr())) {
    nb::dict out;
    for (auto [key, value] : nb::borrow<nb::dict>(data)) out[key] = default_convert(value);
    return out;
  }
  if (nb::isinstance<nb::tuple>(data) || nb::isinstance<nb::list>(data)) {
    nb::list out;
    for (nb::handle item : data) out.append(default_convert(item));
    if (nb::isinstance<nb::tuple>(data) && nb::hasattr(data, "_fields")) return type(*out);
    return out;
  }
  return nb::borrow(data);
}

nb::object example_to_python(const ug::data::Example& e, bool single) {
  if (!e.names.empty()) return example_to_element(e);
  if (single && e.size() == 1) return nb::cast(e[0]);
  nb::list out;
  for (const ug::Tensor& t : e) out.append(nb::cast(t));
  return out;
}

nb::object example_to_element(const ug::data::Example& e) {
  if (!e.names.empty()) {
    nb::dict out;
    for (size_t i = 0; i < e.size(); ++i) out[e.names[i].c_str()] = nb::cast(e[i]);
    return out;
  }
  nb::list fields;
  for (const ug::Tensor& t : e) fields.append(nb::cast(t));
  return nb::tuple(fields);
}

PyRef::PyRef(const PyRef& other) {
  nb::gil_scoped_acquire gil;
  obj_ = other.obj_;
}

PyRef& PyRef::operator=(PyRef&& other) noexcept {
  if (this != &other) {
    release();
    obj_ = std::move(other.obj_);
  }
  return *this;
}

void PyRef::release() noexcept {
  if (!obj_.is_valid()) return;
  if (!Py_IsInitialized()) {
    obj_.release();  // the interpreter is gone: nothing to give back
    return;
  }
  nb::gil_scoped_acquire gil;
  obj_.reset();
}

WorkerRegistration::WorkerRegistration(std::function<void()> stop) {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().stops[this] = std::move(stop);
}

WorkerRegistration::~WorkerRegistration() {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().stops.erase(this);
}

void WorkerRegistration::stop_all() {
  std::map<const void*, std::function<void()>> stops;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    stops.swap(registry().stops);
  }
  nb::gil_scoped_release release;
  for (auto& [key, stop] : stops) stop();
}

std::optional<uint64_t> seed_from_python(nb::handle seed, nb::handle generator) {
  if (!seed.is_none() && !generator.is_none()) ug::fail("[seed] give a seed or a generator, not both");
  nb::handle source = seed.is_none() ? generator : seed;
  if (source.is_none()) return std::nullopt;
  if (PyLong_Check(source.ptr())) return static_cast<uint64_t>(nb::cast<int64_t>(source));
  if (nb::isinstance<ug::Generator>(source)) return nb::cast<ug::Generator&>(source).initial_seed();
  if (nb::hasattr(source, "initial_seed"))
    return static_cast<uint64_t>(nb::cast<int64_t>(source.attr("initial_seed")()));
  ug::fail<ug::TypeError>("[seed] expected an int or a generator with initial_seed(), got ", py_type_name(source));
}

}  // namespace ugpy
