#include "convert.h"

#include <nanobind/ndarray.h>

#include <string>
#include <vector>

#include "ug/compiler/program.h"

namespace ugpy {

namespace {

bool is_numpy_array(nb::handle h) {
  nb::handle type = h.type();
  return nb::hasattr(type, "__module__") && nb::cast<std::string>(type.attr("__module__")) == "numpy" &&
         nb::hasattr(h, "__array_interface__");
}

/** Walks nested lists: fixes the shape from the first path, checks the rest, finds the category. */
void infer(nb::handle h, size_t depth, ug::Shape& shape, size_t& leaf_depth, ug::DTypeCategory& cat) {
  ug::Scalar s;
  if (scalar_from_python(h, s)) {
    if (leaf_depth == SIZE_MAX) leaf_depth = depth;
    if (depth != leaf_depth || depth != shape.size())
      ug::fail("[tensor] expected a sequence at depth ", depth, " (the nested list is ragged)");
    cat = std::max(cat, s.category());
    return;
  }
  if (nb::isinstance<ug::Tensor>(h)) {
    ug::Tensor t = nb::cast<ug::Tensor>(h);
    if (t.dim() == 0) {
      infer(nb::cast(t.item()), depth, shape, leaf_depth, cat);
      return;
    }
  }
  if (!nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
    ug::fail<ug::TypeError>("[tensor] could not convert an object of type ",
                            nb::cast<std::string>(nb::str(h.type().attr("__name__"))), " to a tensor element");
  if (depth >= leaf_depth)
    ug::fail<ug::TypeError>("[tensor] the nested list is ragged: a sequence where a number was expected (depth ", depth,
                            ")");
  int64_t n = static_cast<int64_t>(nb::len(h));
  if (depth == shape.size()) shape.push_back(n);
  else if (shape[depth] != n)
    ug::fail("[tensor] expected sequence of length ", shape[depth], " at dim ", depth, " (got ", n, ")");
  for (nb::handle item : nb::iter(h)) infer(item, depth + 1, shape, leaf_depth, cat);
}

template <class T> void fill(nb::handle h, T*& out) {
  ug::Scalar s;
  if (scalar_from_python(h, s)) {
    *out++ = s.to<T>();
    return;
  }
  if (nb::isinstance<ug::Tensor>(h)) {
    *out++ = nb::cast<ug::Tensor>(h).item().to<T>();
    return;
  }
  for (nb::handle item : nb::iter(h)) fill(item, out);
}

std::optional<ug::DType> dtype_of_numpy(const std::string& s) {
  if (s == "float32") return ug::DType::Float32;
  if (s == "float64") return ug::DType::Float64;
  if (s == "float16") return ug::DType::Float16;
  if (s == "bfloat16") return ug::DType::BFloat16;  // ml_dtypes.bfloat16: the same bits
  if (s == "int32") return ug::DType::Int32;
  if (s == "int64") return ug::DType::Int64;
  if (s == "uint8") return ug::DType::UInt8;
  if (s == "int8") return ug::DType::Int8;
  if (s == "int16") return ug::DType::Int16;
  if (s == "uint16") return ug::DType::UInt16;
  if (s == "uint32") return ug::DType::UInt32;
  if (s == "uint64") return ug::DType::UInt64;
  if (s == "bool") return ug::DType::Bool;
  if (s == "complex64") return ug::DType::Complex64;
  if (s == "complex128") return ug::DType::Complex128;
  return std::nullopt;
}

void release_pyobject(void* ctx) {
  nb::gil_scoped_acquire gil;
  Py_DECREF(static_cast<PyObject*>(ctx));
}

}  // namespace

ug::Tensor from_numpy(nb::handle array) {
  if (!is_numpy_array(array))
    ug::fail<ug::TypeError>("[from_numpy] expected a numpy.ndarray, got ",
                            nb::cast<std::string>(nb::str(array.type().attr("__name__"))));
  std::string name = nb::cast<std::string>(array.attr("dtype").attr("name"));
  auto dtype = dtype_of_numpy(name);
  if (!dtype)
    ug::fail<ug::TypeError>(
        "[from_numpy] can't convert numpy array of type ", name,
        "; supported: float64, float32, float16, bfloat16, int64, int32, int16, int8, uint64, uint32, uint16, "
        "uint8, bool, complex64, complex128");
  nb::dict iface = nb::cast<nb::dict>(array.attr("__array_interface__"));
  nb::tuple data = nb::cast<nb::tuple>(iface["data"]);
  void* ptr = reinterpret_cast<void*>(nb::cast<uintptr_t>(data[0]));
  ug::Dims shape = dims_from_sequence(array.attr("shape"), "from_numpy");
  ug::Dims strides;
  const int64_t item = static_cast<int64_t>(ug::itemsize(*dtype));
  for (nb::handle s : nb::iter(array.attr("strides"))) {
    int64_t bytes = nb::cast<int64_t>(s);
    if (bytes < 0 || bytes % item != 0)
      ug::fail(
          "[from_numpy] arrays with negative or unaligned strides are not supported; use a copy "
          "(np.ascontiguousarray)");
    strides.push_back(bytes / item);
  }
  Py_INCREF(array.ptr());
  return ug::from_blob(ptr, shape, strides, *dtype, release_pyobject, array.ptr());
}

ug::Tensor tensor_from_data(nb::handle data, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
  ug::Device dev = device.value_or(ug::Device());
  if (nb::isinstance<ug::Tensor>(data)) {
    // torch.tensor(t) is t.detach().clone(): a copy out of t's graph.
    ug::Tensor t = nb::cast<ug::Tensor>(data).detach();
    return t.to(dtype.value_or(t.dtype())).to(dev).clone();
  }
  if (is_numpy_array(data)) {
    ug::Tensor t = from_numpy(data);
    return t.to(dtype.value_or(t.dtype()), true).to(dev);
  }
  ug::Shape shape;
  size_t leaf_depth = SIZE_MAX;
  ug::DTypeCategory cat = ug::DTypeCategory::Bool;
  infer(data, 0, shape, leaf_depth, cat);
  if (ug::numel_of(shape) == 0) cat = ug::DTypeCategory::Floating;
  ug::DType d = dtype.value_or(ug::default_dtype_for(cat));
  ug::Tensor t = ug::empty(ug::Dims(shape.begin(), shape.end()), {.dtype = d});
  UG_DISPATCH_ALL_AND_SHELLS(d, "tensor", {
    scalar_t* p = static_cast<scalar_t*>(t.raw_data());
    fill(data, p);
  });
  return t.to(dev);
}

namespace {

/** The Python line calling into the binding now: file:line. */
std::string python_caller() {
  nb::object frame = nb::module_::import_("sys").attr("_getframe")(0);
  return nb::cast<std::string>(frame.attr("f_code").attr("co_filename")) + ":" +
         std::to_string(nb::cast<int64_t>(frame.attr("f_lineno")));
}

}  // namespace

const ug::Tensor& concrete(const ug::Tensor& t, const char* what) {
  if (!ug::compiler::is_traced(t)) return t;
  ug::compiler::check_concrete(t, what, python_caller());
  return t;
}

const ug::Tensor& shape_read(const ug::Tensor& t) {
  if (ug::compiler::is_traced(t)) ug::compiler::note_shape_read(python_caller());
  return t;
}

nb::object to_numpy(const ug::Tensor& t) {
  concrete(t, "conversion to NumPy");
  if (t.device().type != ug::DeviceType::CPU)
    ug::fail<ug::TypeError>("[numpy] can't convert a ", t.device(), " tensor to numpy; use .cpu() first");
  nb::dlpack::dtype dt;
  switch (t.dtype()) {
    case ug::DType::Float32: dt = nb::dtype<float>(); break;
    case ug::DType::Float64: dt = nb::dtype<double>(); break;
    case ug::DType::Int32: dt = nb::dtype<int32_t>(); break;
    case ug::DType::Int64: dt = nb::dtype<int64_t>(); break;
    case ug::DType::UInt8: dt = nb::dtype<uint8_t>(); break;
    case ug::DType::Int8: dt = nb::dtype<int8_t>(); break;
    case ug::DType::Int16: dt = nb::dtype<int16_t>(); break;
    case ug::DType::UInt16: dt = nb::dtype<uint16_t>(); break;
    case ug::DType::UInt32: dt = nb::dtype<uint32_t>(); break;
    case ug::DType::UInt64: dt = nb::dtype<uint64_t>(); break;
    case ug::DType::Bool: dt = nb::dtype<bool>(); break;
    case ug::DType::Float16: dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1}; break;
    case ug::DType::BFloat16: ug::fail<ug::TypeError>("[numpy] numpy has no bfloat16; convert with .float() first");
    case ug::DType::Complex64: dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::Complex), 64, 1}; break;
    case ug::DType::Complex128: dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::Complex), 128, 1}; break;
  }
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  auto* keep = new ug::Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<ug::Tensor*>(p); });
  nb::ndarray<nb::numpy> arr(t.raw_data(), shape.size(), shape.data(), owner, strides.data(), dt);
  return nb::cast(arr);
}

nb::object item_to_python(const ug::Tensor& t) {
  concrete(t, "item()");
  if (t.dtype() == ug::DType::UInt64 && t.numel() == 1 && t.device().type == ug::DeviceType::CPU)
    return nb::steal(PyLong_FromUnsignedLongLong(*static_cast<const uint64_t*>(t.raw_data())));
  return nb::cast(t.item());
}

nb::object to_list(const ug::Tensor& t) {
  concrete(t, "tolist()");
  if (t.dim() == 0) return item_to_python(t);
  nb::list out;
  for (int64_t i = 0; i < t.size(0); ++i) out.append(to_list(t.select(0, i)));
  return out;
}

std::vector<ug::TensorIndex> indices_from_python(nb::handle index) {
  std::vector<ug::TensorIndex> out;
  auto one = [&](nb::handle h) {
    if (h.is_none()) out.emplace_back(ug::None);
    else if (h.ptr() == Py_Ellipsis) out.emplace_back(ug::Ellipsis);
    else if (PyBool_Check(h.ptr())) out.emplace_back(h.ptr() == Py_True);
    else if (PyLong_Check(h.ptr())) out.emplace_back(nb::cast<int64_t>(h));
    else if (PySlice_Check(h.ptr())) {
      auto opt = [](nb::handle v) -> std::optional<int64_t> {
        if (v.is_none()) return std::nullopt;
        return nb::cast<int64_t>(v.attr("__index__")());
      };
      std::optional<int64_t> step = opt(h.attr("step"));
      out.emplace_back(ug::Slice{opt(h.attr("start")), opt(h.attr("stop")), step.value_or(1)});
    } else if (nb::isinstance<ug::Tensor>(h)) {
      out.emplace_back(nb::cast<ug::Tensor>(h));
    } else if (is_numpy_array(h) || nb::isinstance<nb::list>(h)) {
      out.emplace_back(tensor_from_data(h, std::nullopt, std::nullopt));
    } else if (nb::hasattr(h, "__index__")) {
      out.emplace_back(nb::cast<int64_t>(h.attr("__index__")()));
    } else {
      ug::fail<ug::IndexError>(
          "[index] only integers, slices (`:`), ellipsis (`...`), None and "
          "integer or boolean tensors are valid indices (got ",
          nb::cast<std::string>(nb::str(h.type().attr("__name__"))), ")");
    }
  };
  if (nb::isinstance<nb::tuple>(index))
    for (nb::handle h : nb::iter(index)) one(h);
  else one(index);
  return out;
}

}  // namespace ugpy
