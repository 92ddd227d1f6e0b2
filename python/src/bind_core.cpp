// Module-level pieces: dtype and device objects, tensor factories, random numbers (global
// seed and JAX-style keys), threads and memory statistics.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <tuple>

#include "bindings.h"
#include "convert.h"
#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/openblas.h"
#include "ug/core/print_options.h"
#include "ug/graph/op_def.h"
#include "ug/ops/binary.h"
#include "ug/ops/windows.h"
#include "ug/ops/random_distributions.h"

namespace ugpy {

namespace {

using ug::Dims;
using ug::Tensor;

ug::Options opts(std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
  return {dtype, device.value_or(ug::Device())};
}

Tensor with_grad(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

/** A seed as torch takes one: any int, negative ones wrapping modulo 2**64. */
uint64_t seed_of(nb::handle seed, const char* op) {
  if (!PyLong_Check(seed.ptr()) || PyBool_Check(seed.ptr()))
    ug::fail<ug::TypeError>("[", op, "] expected an int seed, got ", nb::inst_name(seed).c_str());
  const unsigned long long v = PyLong_AsUnsignedLongLongMask(seed.ptr());
  if (PyErr_Occurred()) throw nb::python_error();
  return v;
}

// Borrowed: owned by the module attribute ug.return_types.
nb::handle g_values_indices;

}  // namespace

nb::object values_indices_type() { return nb::borrow(g_values_indices); }

void bind_core(nb::module_& m) {
  nb::class_<PyDType>(m, "dtype")
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return ug::is_floating(d.value); })
      .def_prop_ro("itemsize", [](const PyDType& d) { return ug::itemsize(d.value); })
      .def_prop_ro("is_signed",
                   [](const PyDType& d) {
                     return ug::is_inexact(d.value) || d.value == ug::DType::Int8 || d.value == ug::DType::Int16 ||
                            d.value == ug::DType::Int32 || d.value == ug::DType::Int64;
                   })
      .def_prop_ro("is_complex", [](const PyDType& d) { return ug::is_complex(d.value); })
      .def("__repr__", [](const PyDType& d) { return "unigrad." + std::string(ug::dtype_name(d.value)); })
      .def(
          "__eq__",
          [](const PyDType& a, nb::handle b) {
            try {
              return a.value == dtype_from_python(b);
            } catch (...) {
              return false;
            }
          },
          nb::arg("other").none())  // dtype == None is False, as torch's
      .def("__hash__", [](const PyDType& d) { return static_cast<int>(d.value); });
  for (int i = 0; i < ug::kNumDTypes; ++i) {
    auto d = static_cast<ug::DType>(i);
    m.attr(std::string(ug::dtype_name(d)).c_str()) = nb::cast(PyDType{d});
    register_dtype_object(d, m.attr(std::string(ug::dtype_name(d)).c_str()));
  }
  m.attr("bool") = nb::cast(ug::DType::Bool);
  m.attr("float") = nb::cast(ug::DType::Float32);
  m.attr("double") = nb::cast(ug::DType::Float64);
  m.attr("half") = nb::cast(ug::DType::Float16);
  m.attr("int") = nb::cast(ug::DType::Int32);
  m.attr("long") = nb::cast(ug::DType::Int64);
  m.attr("short") = nb::cast(ug::DType::Int16);
  m.attr("cfloat") = nb::cast(ug::DType::Complex64);
  m.attr("cdouble") = nb::cast(ug::DType::Complex128);
  m.def("promote_types", &ug::promote_types);
  m.def("can_cast", &ug::can_cast, nb::arg("from_"), nb::arg("to"),
        "Whether type promotion may cast from_ to to: not floating to integer, not non-bool to bool.");
  // torch.result_type: the dtype an arithmetic op of the two gives (tensors, Python numbers).
  m.def("result_type", nb::overload_cast<const ug::Tensor&, const ug::Tensor&>(&ug::result_type), nb::arg("tensor1"),
        nb::arg("tensor2"));
  m.def("result_type", nb::overload_cast<const ug::Tensor&, const ug::Scalar&>(&ug::result_type), nb::arg("tensor1"),
        nb::arg("tensor2"));
  m.def(
      "result_type", [](const ug::Scalar& a, const ug::Tensor& b) { return ug::result_type(b, a); }, nb::arg("tensor1"),
      nb::arg("tensor2"));
  m.def(
      "result_type",
      [](const ug::Scalar& a, const ug::Scalar& b) { return ug::promote_types(a.default_dtype(), b.default_dtype()); },
      nb::arg("tensor1"), nb::arg("tensor2"));

  nb::class_<PyDevice>(m, "device")
      .def(
          "__init__",
          [](PyDevice* self, nb::handle spec, std::optional<int> index) {
            ug::Device d = device_from_python(spec);
            if (index) d.index = *index;
            new (self) PyDevice{d};
          },
          nb::arg("type"), nb::arg("index") = nb::none())
      .def_prop_ro("type", [](const PyDevice& d) { return d.value.type == ug::DeviceType::CPU ? "cpu" : "cuda"; })
      .def_prop_ro("index", [](const PyDevice& d) { return d.value.index; })
      .def("__repr__",
           [](const PyDevice& d) {
             std::string s = "device(type='" + std::string(d.value.type == ug::DeviceType::CPU ? "cpu" : "cuda") + "'";
             if (d.value.type != ug::DeviceType::CPU) s += ", index=" + std::to_string(d.value.index);
             return s + ")";
           })
      .def("__str__", [](const PyDevice& d) { return d.value.str(); })
      .def(
          "__eq__",
          [](const PyDevice& a, nb::handle b) {
            try {
              return a.value == device_from_python(b);
            } catch (...) {
              return false;
            }
          },
          nb::arg("other").none())  // device == None is False, as torch's
      .def("__hash__", [](const PyDevice& d) { return static_cast<int>(d.value.type) * 1000 + d.value.index; })
      // `with ug.device("cpu"):` (torch) and `with ug.device("/CPU:0"):` (tf.device): new tensors go
      // to the device inside. The CPU is where they go anyway; another device raises, as
      // set_default_device does, until a backend for it exists.
      .def("__enter__",
           [](nb::handle self) {
             const ug::Device d = nb::cast<const PyDevice&>(self).value;
             if (d.type != ug::DeviceType::CPU)
               ug::fail<ug::RuntimeError>("[device] cannot place new tensors on ", d,
                                          ": unigrad computes on the CPU in this build (where TensorFlow would "
                                          "place them on the CPU quietly, say so: '/CPU:0')");
             return self;
           })
      .def("__exit__", [](const PyDevice&, nb::args) { return false; });
  m.def("device_available", [](ug::Device d) { return ug::device_available(d); });
  m.def("cuda_device_count", &ug::cuda::device_count);
  m.attr("__version__") = ug::version();

  nb::module_ collections = nb::module_::import_("collections");
  m.attr("return_types") = collections.attr("namedtuple")("return_types", nb::make_tuple("values", "indices"));
  g_values_indices = m.attr("return_types");

  m.def("set_num_threads", &ug::set_num_threads, nb::arg("n"));
  m.def("get_num_threads", &ug::get_num_threads);
  m.def("_openblas_core", &ug::openblas_core, "The kernels OpenBLAS picked when it was loaded.");
  m.def(
      "_cpu_kernels", [] { return std::make_pair(ug::cpu::cpu_backend().isa(), ug::cpu::cpu_backend().bf16_kernel()); },
      "(the SIMD kernel set, what runs bfloat16 products: 'amx', 'avx512bf16' or 'widened').");
  m.def(
      "_openblas_core_for_cpu", [] { return std::string(ug::openblas_core_for_cpu()); },
      "The OpenBLAS kernels this CPU's features run ('' where OpenBLAS's own choice stands).");
  m.def("set_default_dtype", &ug::set_default_dtype, nb::arg("d"),
        "The floating dtype of new tensors that name none, of Python floats and of float results from integers "
        "(torch.set_default_dtype): float32, float64, float16 or bfloat16.");
  m.def("get_default_dtype", &ug::get_default_dtype);
  m.def("registered_ops", &ug::graph::registered_ops,
        "The name of every op, sorted: each op's graph::OpDef registers it (src/ug/graph/op_def.h).");
  m.def(
      "manual_seed", [](nb::handle seed) { ug::manual_seed(seed_of(seed, "manual_seed")); }, nb::arg("seed"));
  nb::class_<ug::Generator>(m, "Generator",
                            "A random generator of its own (torch.Generator): draws given generator=g advance it, "
                            "not the global one; the same seed gives the same draws.")
      .def(
          "__init__",
          [](ug::Generator* g, nb::handle device) {
            if (!device.is_none() && nb::cast<std::string>(nb::str(device)) != "cpu")
              ug::fail("[Generator] only a 'cpu' generator is supported, got device=",
                       nb::cast<std::string>(nb::str(device)));
            new (g) ug::Generator();
          },
          nb::arg("device") = "cpu")
      .def(
          "manual_seed",
          [](nb::handle self, nb::handle seed) {
            nb::cast<ug::Generator&>(self).manual_seed(seed_of(seed, "Generator.manual_seed"));
            return nb::borrow(self);
          },
          nb::arg("seed"), "Seeds the generator; returns it.")
      .def("seed", &ug::Generator::seed, "Seeds the generator from a non-deterministic source; returns the seed.")
      .def("initial_seed", &ug::Generator::initial_seed, "The seed the generator was last seeded with.")
      .def(
          "get_state",
          [](ug::Generator& g) {
            ug::GeneratorScope scope(g);
            return ug::get_rng_state();
          },
          "The state as an int64 tensor [seed, offset] (as ug.get_rng_state), for set_state.")
      .def(
          "set_state",
          [](nb::handle self, const Tensor& state) {
            ug::GeneratorScope scope(nb::cast<ug::Generator&>(self));
            ug::set_rng_state(state);
            return nb::borrow(self);
          },
          nb::arg("new_state"), "Restores a state from get_state; returns the generator.")
      .def_prop_ro("device", [](const ug::Generator&) { return ug::Device(); });
  m.def("initial_seed", [] { return ug::default_generator().initial_seed(); });
  m.def(
      "set_printoptions",
      [](std::optional<int> precision, std::optional<double> threshold, std::optional<int64_t> edgeitems,
         std::optional<int64_t> linewidth, std::optional<std::string> profile, std::optional<bool> sci_mode) {
        ug::PrintOptions o = ug::print_options();
        if (profile) {  // torch's profiles, then the numbers given
          if (*profile != "default" && *profile != "short" && *profile != "full")
            throw nb::value_error("[set_printoptions] profile must be 'default', 'short' or 'full'");
          o = ug::PrintOptions{};
          if (*profile == "short") o.precision = 2, o.edgeitems = 2;
          if (*profile == "full") o.threshold = INT64_MAX;
        }
        if (precision) o.precision = *precision;
        // torch takes threshold=math.inf (or sys.maxsize) for "never elide"
        if (threshold) o.threshold = *threshold >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(*threshold);
        if (edgeitems) o.edgeitems = *edgeitems;
        if (linewidth) o.linewidth = *linewidth;
        o.sci_mode = sci_mode;
        ug::set_print_options(o);
      },
      nb::arg("precision") = nb::none(), nb::arg("threshold") = nb::none(), nb::arg("edgeitems") = nb::none(),
      nb::arg("linewidth") = nb::none(), nb::arg("profile") = nb::none(), nb::arg("sci_mode") = nb::none(),
      "How tensors print (torch.set_printoptions): digits, the element count past which the middle is elided, the "
      "items at each edge, the line width rows wrap at, a profile ('default', 'short', 'full'), scientific notation "
      "forced on or off (None: chosen from the values).");
  m.def("get_rng_state", &ug::get_rng_state);
  m.def("set_rng_state", &ug::set_rng_state, nb::arg("new_state"));

  nb::module_ mem = m.def_submodule("_memory");
  mem.def(
      "stats",
      [](ug::Device d) {
        ug::MemoryStats s = ug::allocator_for(d).stats();
        nb::dict out;
        out["allocated"] = s.allocated;
        out["max_allocated"] = s.max_allocated;
        out["reserved"] = s.reserved;
        out["max_reserved"] = s.max_reserved;
        out["num_allocs"] = s.num_allocs;
        out["num_frees"] = s.num_frees;
        out["cache_hits"] = s.cache_hits;
        out["allocated_total"] = s.allocated_total;
        out["freed_total"] = s.freed_total;
        out["num_ooms"] = s.num_ooms;
        return out;
      },
      nb::arg("device") = ug::Device());
  mem.def(
      "reset_peak", [](ug::Device d) { ug::allocator_for(d).reset_peak(); }, nb::arg("device") = ug::Device());
  mem.def(
      "empty_cache", [](ug::Device d) { ug::allocator_for(d).empty_cache(); }, nb::arg("device") = ug::Device());
  mem.def(
      "summary", [](ug::Device d) { return ug::memory_summary(d); }, nb::arg("device") = ug::Device());
  mem.def(
      "set_limit", [](int64_t bytes, ug::Device d) { ug::allocator_for(d).set_limit(bytes); }, nb::arg("bytes"),
      nb::arg("device") = ug::Device());
  mem.def(
      "limit", [](ug::Device d) { return ug::allocator_for(d).limit(); }, nb::arg("device") = ug::Device());
}

void bind_creation(nb::module_& m) {
  auto a_dtype = nb::arg("dtype") = nb::none();
  auto a_device = nb::arg("device") = nb::none();
  auto a_grad = nb::arg("requires_grad") = false;
  m.def(
      "tensor",
      [](nb::handle data, std::optional<ug::DType> dtype, std::optional<ug::Device> device, bool rg) {
        return with_grad(tensor_from_data(data, dtype, device), rg);
      },
      nb::arg("data"), nb::kw_only(), a_dtype, a_device, a_grad,
      "A new tensor copied from data: a number, a nested list, a NumPy array or a Tensor (torch.tensor).");
  m.def(
      "as_tensor",
      [](nb::handle data, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
        if (nb::isinstance<Tensor>(data)) {
          Tensor t = nb::cast<Tensor>(data);
          return t.to(dtype.value_or(t.dtype())).to(device.value_or(t.device()));
        }
        nb::handle type = data.type();
        if (nb::cast<std::string>(type.attr("__module__")) == "numpy" && nb::hasattr(data, "__array_interface__")) {
          Tensor t = from_numpy(data);
          return t.to(dtype.value_or(t.dtype())).to(device.value_or(t.device()));
        }
        return tensor_from_data(data, dtype, device);
      },
      nb::arg("data"), a_dtype, a_device,
      "data as a tensor, sharing the memory of a Tensor or a NumPy array when dtype and device allow "
      "(torch.as_tensor).");
  m.def("from_numpy", &from_numpy, nb::arg("ndarray"), "A tensor sharing the memory of a NumPy array.");
  m.def(
      "is_tensor", [](nb::handle h) { return nb::isinstance<Tensor>(h); }, nb::arg("obj"),
      "Whether obj is a ug.Tensor.");

#define UG_SIZED_FACTORY(name, doc)                                                                  \
  m.def(                                                                                             \
      #name,                                                                                         \
      [](nb::args size, std::optional<ug::DType> dtype, std::optional<ug::Device> device, bool rg) { \
        return with_grad(ug::name(dims_from_args(size, #name), opts(dtype, device)), rg);            \
      },                                                                                             \
      nb::arg("size"), a_dtype, a_device, a_grad,                                                    \
      doc " of the given size: ug." #name "(2, 3) or ug." #name "((2, 3)).");
  UG_SIZED_FACTORY(empty, "An uninitialised tensor")
  UG_SIZED_FACTORY(zeros, "A tensor of zeros")
  UG_SIZED_FACTORY(ones, "A tensor of ones")
#undef UG_SIZED_FACTORY
#define UG_RANDOM_FACTORY(name, doc)                                                                                 \
  m.def(                                                                                                             \
      #name,                                                                                                         \
      [](nb::args size, nb::handle generator, std::optional<ug::DType> dtype, std::optional<ug::Device> device,      \
         bool rg) {                                                                                                  \
        return with_grad(with_generator(generator, #name,                                                            \
                                        [&] { return ug::name(dims_from_args(size, #name), opts(dtype, device)); }), \
                         rg);                                                                                        \
      },                                                                                                             \
      nb::arg("size"), nb::arg("generator").none() = nb::none(), a_dtype, a_device, a_grad,                          \
      doc " of the given size: ug." #name "(2, 3) or ug." #name "((2, 3)), from generator if given.");
  UG_RANDOM_FACTORY(rand, "Uniform samples in [0, 1)")
  UG_RANDOM_FACTORY(randn, "Standard normal samples")
#undef UG_RANDOM_FACTORY
  m.def(
      "full",
      [](nb::handle size, ug::Scalar value, std::optional<ug::DType> dtype, std::optional<ug::Device> device, bool rg) {
        return with_grad(ug::full(dims_from_sequence(size, "full"), value, opts(dtype, device)), rg);
      },
      nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), a_dtype, a_device, a_grad,
      "A tensor of the given size filled with fill_value.");
#define UG_LIKE_FACTORY(name)                                                                          \
  m.def(                                                                                               \
      #name,                                                                                           \
      [](const Tensor& t, std::optional<ug::DType> dtype, std::optional<ug::Device> device, bool rg) { \
        return with_grad(ug::name(t, {dtype, device.value_or(t.device())}), rg);                       \
      },                                                                                               \
      nb::arg("input"), nb::kw_only(), a_dtype, a_device, a_grad,                                      \
      "ug." #name "(input): the shape, dtype and device of input unless dtype or device is given.");
  UG_LIKE_FACTORY(empty_like)
  UG_LIKE_FACTORY(zeros_like)
  UG_LIKE_FACTORY(ones_like)
#undef UG_LIKE_FACTORY
  m.def(
      "full_like",
      [](const Tensor& t, ug::Scalar v, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
        return ug::full_like(t, v, {dtype, device.value_or(t.device())});
      },
      nb::arg("input"), nb::arg("fill_value"), nb::kw_only(), a_dtype, a_device,
      "A tensor shaped like input filled with fill_value.");
  m.def(
      "rand_like",
      [](const Tensor& t, std::optional<ug::DType> dtype) {
        return ug::rand(t.shape(), {dtype.value_or(t.dtype()), t.device()});
      },
      nb::arg("input"), nb::kw_only(), a_dtype, "Uniform samples in [0, 1) shaped like input.");
  m.def(
      "randn_like",
      [](const Tensor& t, std::optional<ug::DType> dtype) {
        return ug::randn(t.shape(), {dtype.value_or(t.dtype()), t.device()});
      },
      nb::arg("input"), nb::kw_only(), a_dtype, "Standard normal samples shaped like input.");
  m.def(
      "randint",
      [](nb::args args, nb::handle generator, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
        // randint(high, size) or randint(low, high, size), as in torch.
        if (args.size() != 2 && args.size() != 3)
          ug::fail<ug::TypeError>("[randint] expected randint(low=0, high, size)");
        int64_t low = args.size() == 3 ? nb::cast<int64_t>(args[0]) : 0;
        int64_t high = nb::cast<int64_t>(args[args.size() - 2]);
        Dims size = dims_from_sequence(args[args.size() - 1], "randint");
        return with_generator(generator, "randint", [&] { return ug::randint(low, high, size, opts(dtype, device)); });
      },
      nb::arg("args"), nb::arg("generator").none() = nb::none(), a_dtype, a_device,
      "randint(high, size) or randint(low, high, size): integers drawn uniformly from [low, high).");
  m.def(
      "normal",
      [](double mean, double std, nb::handle size, nb::handle generator, std::optional<ug::DType> dtype) {
        Dims dims = dims_from_sequence(size, "normal");
        return with_generator(generator, "normal", [&] { return ug::normal(mean, std, dims, {dtype, {}}); });
      },
      nb::arg("mean"), nb::arg("std"), nb::arg("size"), nb::kw_only(), nb::arg("generator").none() = nb::none(),
      a_dtype, "Normal samples of the given mean and standard deviation.");
  m.def(
      "randperm",
      [](int64_t n, nb::handle generator, std::optional<ug::DType> dtype) {
        return with_generator(generator, "randperm", [&] { return ug::randperm(n, {dtype, {}}); });
      },
      nb::arg("n"), nb::kw_only(), nb::arg("generator").none() = nb::none(), a_dtype,
      "A random permutation of 0 .. n - 1.");
  m.def(
      "poisson",
      [](const Tensor& rates, nb::handle generator) {
        return with_generator(generator, "poisson", [&] { return ug::poisson(rates); });
      },
      nb::arg("input"), nb::arg("generator").none() = nb::none(),
      "A Poisson count for each rate (torch.poisson), in the rates' dtype, from generator or the global one.");
  m.def(
      "binomial",
      [](const Tensor& count, const Tensor& prob, nb::handle generator) {
        return with_generator(generator, "binomial", [&] { return ug::binomial(count, prob); });
      },
      nb::arg("count"), nb::arg("prob"), nb::arg("generator").none() = nb::none(),
      "A Binomial(count, prob) draw for each element of their broadcast (torch.binomial), from generator or the "
      "global one.");
  m.def(
      "_standard_gamma",
      [](const Tensor& alpha, nb::handle generator) {
        return with_generator(generator, "_standard_gamma", [&] { return ug::standard_gamma(alpha); });
      },
      nb::arg("input"), nb::arg("generator").none() = nb::none(),
      "A Gamma(alpha, 1) draw for each alpha (torch._standard_gamma), differentiable in alpha (the implicit "
      "reparameterisation gradient), from generator or the global one.");
  m.def("_standard_gamma_grad", &ug::standard_gamma_grad, nb::arg("input"), nb::arg("output"),
        "The derivative of Gamma(input, 1) draws `output` in input, their quantiles held fixed "
        "(torch._standard_gamma_grad).");
  m.def(
      "arange",
      [](ug::Scalar start, std::optional<ug::Scalar> end, ug::Scalar step, std::optional<ug::DType> dtype,
         std::optional<ug::Device> device, bool rg) {
        if (!end) return with_grad(ug::arange(0, start, step, opts(dtype, device)), rg);
        return with_grad(ug::arange(start, *end, step, opts(dtype, device)), rg);
      },
      nb::arg("start"), nb::arg("end") = nb::none(), nb::arg("step") = 1, nb::kw_only(), a_dtype, a_device, a_grad,
      "arange(end) or arange(start, end, step): the values from start up to (not including) end.");
  m.def(
      "linspace",
      [](double start, double end, int64_t steps, std::optional<ug::DType> dtype, std::optional<ug::Device> device,
         bool rg) { return with_grad(ug::linspace(start, end, steps, opts(dtype, device)), rg); },
      nb::arg("start"), nb::arg("end"), nb::arg("steps"), nb::kw_only(), a_dtype, a_device, a_grad,
      "steps values evenly spaced from start to end, both included.");
  // The window functions (ug/ops/windows.h), torch's signatures. Hann, Blackman and Bartlett
  // take (window_length, periodic) alone.
  using PlainWindow = ug::Tensor (*)(int64_t, bool, ug::Options);
  for (auto [name, fn, doc] :
       {std::tuple<const char*, PlainWindow, const char*>{
            "hann_window", ug::hann_window, "The Hann window: 0.5 - 0.5 cos(2 pi n / (N - 1)), periodic by default."},
        {"blackman_window", ug::blackman_window, "The Blackman window."},
        {"bartlett_window", ug::bartlett_window, "The Bartlett (triangular) window."}})
    m.def(
        name,
        [fn](int64_t n, bool periodic, std::optional<ug::DType> dtype, std::optional<ug::Device> device, bool rg) {
          return with_grad(fn(n, periodic, opts(dtype, device)), rg);
        },
        nb::arg("window_length"), nb::arg("periodic") = true, nb::kw_only(), a_dtype, a_device, a_grad, doc);
  m.def(
      "hamming_window",
      [](int64_t n, bool periodic, double alpha, double beta, std::optional<ug::DType> dtype,
         std::optional<ug::Device> device,
         bool rg) { return with_grad(ug::hamming_window(n, periodic, alpha, beta, opts(dtype, device)), rg); },
      nb::arg("window_length"), nb::arg("periodic") = true, nb::arg("alpha") = 0.54, nb::arg("beta") = 0.46,
      nb::kw_only(), a_dtype, a_device, a_grad, "The Hamming window: alpha - beta cos(2 pi n / (N - 1)).");
  m.def(
      "kaiser_window",
      [](int64_t n, bool periodic, double beta, std::optional<ug::DType> dtype, std::optional<ug::Device> device,
         bool rg) { return with_grad(ug::kaiser_window(n, periodic, beta, opts(dtype, device)), rg); },
      nb::arg("window_length"), nb::arg("periodic") = true, nb::arg("beta") = 12.0, nb::kw_only(), a_dtype, a_device,
      a_grad, "The Kaiser window: I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta).");
  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> cols, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
        return ug::eye(n, cols, opts(dtype, device));
      },
      nb::arg("n"), nb::arg("m") = nb::none(), nb::kw_only(), a_dtype, a_device,
      "The n x m (n x n by default) matrix with ones on the diagonal.");

  nb::module_ r = m.def_submodule("random", "JAX-style explicit keys: key, split, normal, uniform, ...");
  r.def(
      "key", [](int64_t seed) { return ug::random::key(static_cast<uint64_t>(seed)); }, nb::arg("seed"));
  r.def(
      "PRNGKey", [](int64_t seed) { return ug::random::key(static_cast<uint64_t>(seed)); }, nb::arg("seed"));
  r.def("split", &ug::random::split, nb::arg("key"), nb::arg("num") = 2);
  r.def(
      "fold_in", [](const Tensor& k, int64_t d) { return ug::random::fold_in(k, static_cast<uint64_t>(d)); },
      nb::arg("key"), nb::arg("data"), "A key derived from key and the integer data (jax.random.fold_in).");
  r.def(
      "fold_in", [](const Tensor& k, const Tensor& d) { return ug::random::fold_in(k, d); }, nb::arg("key"),
      nb::arg("data"),
      "data a 0-d integer tensor: the same key as with its int, and traced under jit, batched under vmap.");
  r.def(
      "uniform",
      [](const Tensor& k, nb::handle shape, std::optional<ug::DType> dtype, double lo, double hi) {
        return ug::random::uniform(k, dims_from_sequence(shape, "random.uniform"), lo, hi, dtype);
      },
      nb::arg("key"), nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none(), nb::arg("minval") = 0.0,
      nb::arg("maxval") = 1.0);
  r.def(
      "normal",
      [](const Tensor& k, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::normal(k, dims_from_sequence(shape, "random.normal"), dtype);
      },
      nb::arg("key"), nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none());
  r.def(
      "randint",
      [](const Tensor& k, nb::handle shape, int64_t lo, int64_t hi, ug::DType dtype) {
        return ug::random::randint(k, dims_from_sequence(shape, "random.randint"), lo, hi, dtype);
      },
      nb::arg("key"), nb::arg("shape"), nb::arg("minval"), nb::arg("maxval"), nb::arg("dtype") = ug::DType::Int64);
  r.def(
      "bernoulli",
      [](const Tensor& k, double p, nb::handle shape) {
        return ug::random::bernoulli(k, p, dims_from_sequence(shape, "random.bernoulli"));
      },
      nb::arg("key"), nb::arg("p") = 0.5, nb::arg("shape") = nb::tuple());
  r.def(
      "categorical",
      [](const Tensor& k, const Tensor& logits, int64_t axis, nb::handle shape) {
        return ug::random::categorical(
            k, logits, axis,
            shape.is_none() ? std::nullopt : std::optional(dims_from_sequence(shape, "random.categorical")));
      },
      nb::arg("key"), nb::arg("logits"), nb::arg("axis") = -1, nb::arg("shape") = nb::none());
  r.def(
      "permutation",
      [](const Tensor& k, nb::handle x) {
        if (nb::isinstance<Tensor>(x)) return ug::random::permutation(k, nb::cast<Tensor>(x));
        return ug::random::permutation(k, nb::cast<int64_t>(x));
      },
      nb::arg("key"), nb::arg("x"));
  auto shaped = [](nb::handle shape, const char* op) { return dims_from_sequence(shape, op); };
  r.def(
      "truncated_normal",
      [=](const Tensor& k, double lower, double upper, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::truncated_normal(k, lower, upper, shaped(shape, "random.truncated_normal"), dtype);
      },
      nb::arg("key"), nb::arg("lower"), nb::arg("upper"), nb::arg("shape") = nb::tuple(),
      nb::arg("dtype") = nb::none());
  // The location-scale families of one standard draw each: (key, shape, dtype).
  using Family = ug::Tensor (*)(const Tensor&, const ug::Dims&, std::optional<ug::DType>);
  for (const auto& entry : {std::pair<const char*, Family>{"exponential", &ug::random::exponential},
                            {"laplace", &ug::random::laplace},
                            {"logistic", &ug::random::logistic},
                            {"cauchy", &ug::random::cauchy},
                            {"gumbel", &ug::random::gumbel}}) {
    const char* name = entry.first;
    const Family fn = entry.second;
    r.def(
        name,
        [=](const Tensor& k, nb::handle shape, std::optional<ug::DType> dtype) {
          return fn(k, shaped(shape, name), dtype);
        },
        nb::arg("key"), nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none());
  }
  r.def(
      "rademacher",
      [=](const Tensor& k, nb::handle shape, ug::DType dtype) {
        return ug::random::rademacher(k, shaped(shape, "random.rademacher"), dtype);
      },
      nb::arg("key"), nb::arg("shape"), nb::arg("dtype") = ug::DType::Int32);
  r.def(
      "lognormal",
      [=](const Tensor& k, double sigma, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::lognormal(k, sigma, shaped(shape, "random.lognormal"), dtype);
      },
      nb::arg("key"), nb::arg("sigma") = 1.0, nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none());
  r.def(
      "choice",
      [=](const Tensor& k, nb::handle a, nb::handle shape, bool replace, std::optional<Tensor> p, int64_t axis) {
        const ug::Dims dims = shaped(shape, "random.choice");
        if (nb::isinstance<Tensor>(a)) return ug::random::choice(k, nb::cast<Tensor>(a), dims, replace, p, axis);
        return ug::random::choice(k, nb::cast<int64_t>(a), dims, replace, p);
      },
      nb::arg("key"), nb::arg("a"), nb::arg("shape") = nb::tuple(), nb::arg("replace") = true,
      nb::arg("p") = nb::none(), nb::arg("axis") = 0);
  r.def(
      "multivariate_normal",
      [=](const Tensor& k, const Tensor& mean, const Tensor& cov, nb::handle shape, std::optional<ug::DType> dtype,
          const std::string& method) {
        if (method != "cholesky")
          ug::fail("[random.multivariate_normal] method '", method, "' is not supported; use 'cholesky'");
        std::optional<ug::Dims> dims;
        if (!shape.is_none()) dims = shaped(shape, "random.multivariate_normal");
        return ug::random::multivariate_normal(k, mean, cov, dims, dtype);
      },
      nb::arg("key"), nb::arg("mean"), nb::arg("cov"), nb::arg("shape") = nb::none(), nb::arg("dtype") = nb::none(),
      nb::arg("method") = "cholesky");
  r.def(
      "orthogonal",
      [=](const Tensor& k, int64_t n, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::orthogonal(k, n, shaped(shape, "random.orthogonal"), dtype);
      },
      nb::arg("key"), nb::arg("n"), nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none());
  // gamma and the distributions made from it take numbers or tensors as parameters, and a
  // shape that defaults to the parameters' (jax.random's signatures).
  auto parameter = [](nb::handle x, std::optional<ug::DType> dtype) {
    if (nb::isinstance<Tensor>(x)) return nb::cast<Tensor>(x);
    return ug::scalar_tensor(nb::cast<double>(x), {.dtype = dtype.value_or(ug::get_default_dtype())});
  };
  auto optional_shape = [=](nb::handle shape, const char* op) {
    return shape.is_none() ? std::nullopt : std::optional<ug::Dims>(shaped(shape, op));
  };
  using OneParameter =
      ug::Tensor (*)(const Tensor&, const Tensor&, const std::optional<ug::Dims>&, std::optional<ug::DType>);
  for (const auto& entry : {std::tuple<const char*, const char*, OneParameter>{"gamma", "a", &ug::random::gamma},
                            {"loggamma", "a", &ug::random::loggamma},
                            {"dirichlet", "alpha", &ug::random::dirichlet},
                            {"chisquare", "df", &ug::random::chisquare},
                            {"t", "df", &ug::random::t},
                            {"pareto", "b", &ug::random::pareto},
                            {"rayleigh", "scale", &ug::random::rayleigh},
                            {"wald", "mean", &ug::random::wald}}) {
    const char* name = std::get<0>(entry);
    const OneParameter fn = std::get<2>(entry);
    r.def(
        name,
        [=](const Tensor& k, nb::handle a, nb::handle shape, std::optional<ug::DType> dtype) {
          return fn(k, parameter(a, dtype), optional_shape(shape, name), dtype);
        },
        nb::arg("key"), nb::arg(std::get<1>(entry)), nb::arg("shape") = nb::none(), nb::arg("dtype") = nb::none());
  }
  using TwoParameters = ug::Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const std::optional<ug::Dims>&,
                                       std::optional<ug::DType>);
  for (const auto& entry :
       {std::tuple<const char*, const char*, const char*, TwoParameters>{"beta", "a", "b", &ug::random::beta},
        {"weibull_min", "scale", "concentration", &ug::random::weibull_min},
        {"double_sided_maxwell", "loc", "scale", &ug::random::double_sided_maxwell}}) {
    const char* name = std::get<0>(entry);
    const TwoParameters fn = std::get<3>(entry);
    r.def(
        name,
        [=](const Tensor& k, nb::handle a, nb::handle b, nb::handle shape, std::optional<ug::DType> dtype) {
          return fn(k, parameter(a, dtype), parameter(b, dtype), optional_shape(shape, name), dtype);
        },
        nb::arg("key"), nb::arg(std::get<1>(entry)), nb::arg(std::get<2>(entry)), nb::arg("shape") = nb::none(),
        nb::arg("dtype") = nb::none());
  }
  r.def(
      "triangular",
      [=](const Tensor& k, nb::handle left, nb::handle mode, nb::handle right, nb::handle shape,
          std::optional<ug::DType> dtype) {
        return ug::random::triangular(k, parameter(left, dtype), parameter(mode, dtype), parameter(right, dtype),
                                      optional_shape(shape, "random.triangular"), dtype);
      },
      nb::arg("key"), nb::arg("left"), nb::arg("mode"), nb::arg("right"), nb::arg("shape") = nb::none(),
      nb::arg("dtype") = nb::none());
  r.def(
      "maxwell",
      [=](const Tensor& k, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::maxwell(k, shaped(shape, "random.maxwell"), dtype);
      },
      nb::arg("key"), nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none());
  r.def(
      "generalized_normal",
      [=](const Tensor& k, double p, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::generalized_normal(k, p, shaped(shape, "random.generalized_normal"), dtype);
      },
      nb::arg("key"), nb::arg("p"), nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none());
  r.def(
      "ball",
      [=](const Tensor& k, int64_t d, double p, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::ball(k, d, p, shaped(shape, "random.ball"), dtype);
      },
      nb::arg("key"), nb::arg("d"), nb::arg("p") = 2.0, nb::arg("shape") = nb::tuple(), nb::arg("dtype") = nb::none());
  // Counts: numbers as float64 parameters (a float32 n or lam would round above 2^24); poisson
  // and geometric are int32 unless given, binomial floating (jax.random's dtypes).
  auto count_parameter = [=](nb::handle x) { return parameter(x, ug::DType::Float64); };
  r.def(
      "poisson",
      [=](const Tensor& k, nb::handle lam, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::poisson(k, count_parameter(lam), optional_shape(shape, "random.poisson"),
                                   dtype.value_or(ug::DType::Int32));
      },
      nb::arg("key"), nb::arg("lam"), nb::arg("shape") = nb::none(), nb::arg("dtype") = nb::none());
  r.def(
      "geometric",
      [=](const Tensor& k, nb::handle p, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::geometric(k, count_parameter(p), optional_shape(shape, "random.geometric"),
                                     dtype.value_or(ug::DType::Int32));
      },
      nb::arg("key"), nb::arg("p"), nb::arg("shape") = nb::none(), nb::arg("dtype") = nb::none());
  r.def(
      "binomial",
      [=](const Tensor& k, nb::handle n, nb::handle p, nb::handle shape, std::optional<ug::DType> dtype) {
        return ug::random::binomial(k, count_parameter(n), count_parameter(p), optional_shape(shape, "random.binomial"),
                                    dtype);
      },
      nb::arg("key"), nb::arg("n"), nb::arg("p"), nb::arg("shape") = nb::none(), nb::arg("dtype") = nb::none());
}

}  // namespace ugpy
