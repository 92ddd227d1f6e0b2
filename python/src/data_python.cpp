#include "data_python.h"

#include <map>
#include <mutex>

#include "convert.h"
#include "ug/data/collate.h"
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

bool is_string(nb::handle h) { return PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr()); }
bool is_namedtuple(nb::handle h) { return nb::isinstance<nb::tuple>(h) && nb::hasattr(h, "_fields"); }
/** A value that becomes one tensor: a tensor, a number or a NumPy array. */
bool is_value(nb::handle h) {
  return nb::isinstance<ug::Tensor>(h) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) ||
         (nb::hasattr(h, "__array_interface__") && !is_string(h));
}

/** A sample that ug::data::Example holds: a value, or a plain tuple or list of values, or a
 *  dict of them by string keys. */
bool is_flat(nb::handle sample) {
  if (PyDict_Check(sample.ptr())) {
    for (auto [key, value] : nb::borrow<nb::dict>(sample))
      if (!PyUnicode_Check(key.ptr()) || !is_value(value)) return false;
    return true;
  }
  if ((nb::isinstance<nb::tuple>(sample) && !is_namedtuple(sample)) || nb::isinstance<nb::list>(sample)) {
    for (nb::handle value : sample)
      if (!is_value(value)) return false;
    return true;
  }
  return is_value(sample);
}

/** default_collate's recursion over the samples' structure, led by the first sample's. A
 *  field of tuples or lists is a `column` (then strings stay a tuple, as torch's zip gives them). */
nb::object collate_nested(const nb::list& batch, const char* op, bool column = false) {
  nb::handle first = batch[0];
  auto mismatch = [&](size_t s) {
    ug::fail<ug::TypeError>("[", op, "] sample ", s, " of the batch is a ", py_type_name(batch[s]), ", sample 0 is a ",
                            py_type_name(first));
  };
  if (is_value(first)) {
    std::vector<ug::data::Example> rows;
    for (size_t s = 0; s < batch.size(); ++s) {
      if (!is_value(batch[s])) mismatch(s);
      rows.push_back({field_from_python(batch[s], op, std::to_string(s))});
    }
    return nb::cast(without_gil([&] { return ug::data::default_collate(rows); })[0]);
  }
  if (is_string(first)) return column ? nb::object(nb::tuple(batch)) : nb::object(batch);  // as torch
  if (PyDict_Check(first.ptr())) {
    nb::dict out;
    for (auto [key, value] : nb::borrow<nb::dict>(first)) {
      nb::list column;
      for (size_t s = 0; s < batch.size(); ++s) {
        if (!PyDict_Check(batch[s].ptr())) mismatch(s);
        if (!nb::borrow<nb::dict>(batch[s]).contains(key))
          ug::fail("[", op, "] sample 0 of the batch has the key ", nb::cast<std::string>(nb::repr(key)), ", sample ",
                   s, " does not");
        column.append(batch[s][key]);
      }
      out[key] = collate_nested(column, op);
    }
    return out;
  }
  if (nb::isinstance<nb::tuple>(first) || nb::isinstance<nb::list>(first)) {
    const size_t fields = nb::len(first);
    for (size_t s = 1; s < batch.size(); ++s) {
      nb::handle sample = batch[s];
      if (!nb::isinstance<nb::tuple>(sample) && !nb::isinstance<nb::list>(sample)) mismatch(s);
      if (nb::len(sample) != fields)
        ug::fail("[", op, "] sample ", s, " of the batch has ", nb::len(sample), " fields, sample 0 has ", fields);
    }
    nb::list out;
    for (size_t f = 0; f < fields; ++f) {
      nb::list column;
      for (nb::handle sample : batch) column.append(sample[f]);
      out.append(collate_nested(column, op, true));
    }
    return is_namedtuple(first) ? first.type()(*out) : nb::object(out);
  }
  ug::fail<ug::TypeError>("[", op,
                          "] batch must contain tensors, NumPy arrays, numbers, strings, dicts or lists; found a ",
                          py_type_name(first));
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

nb::object collate_samples(nb::handle batch, const char* op) {
  nb::list samples;
  for (nb::handle s : nb::iter(batch)) samples.append(s);
  if (samples.size() == 0) ug::fail("[", op, "] expected at least one sample");
  for (nb::handle s : samples)
    if (!is_flat(s)) return collate_nested(samples, op);
  std::vector<ug::data::Example> rows;
  bool single = false;
  for (nb::handle s : samples) rows.push_back(example_from_python(s, op, &single));
  return example_to_python(without_gil([&] { return ug::data::default_collate(rows); }), single);
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
