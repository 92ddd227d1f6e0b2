// torch's conveniences (ops/composite.h), the aliases torch keeps for NumPy's names, the new_*
// factories that take a tensor's dtype and device, method and in-place forms of indexing ops
// and random draws, and finfo / iinfo. Each is a Tensor method;
// python/unigrad/__init__.py makes the function forms (ug.tril(x) is x.tril()).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "ug/core/type_info.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/indexing.h"
#include "ug/ops/random.h"

namespace ugpy {

namespace {

using ug::Scalar;
using ug::Tensor;
using namespace nb::literals;

std::optional<ug::Dims> optional_dims(nb::handle dim, const char* op) {
  if (dim.is_none()) return std::nullopt;
  return dims_from_sequence(dim, op);
}

/** A tensor method's in-place form (taking arguments of types A): the result written into the
 *  tensor. */
template <class... A, class F> auto in_place(F f) {
  return [f](Tensor& t, A... args) -> Tensor& { return t.copy_(f(ugpy::operand_of_in_place(t, args...), args...)); };
}

ug::Options like(const Tensor& t, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
  return {.dtype = dtype.value_or(t.dtype()), .device = device.value_or(t.device())};
}

Tensor with_grad(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

struct PyFinfo {
  ug::FloatInfo info;
  ug::DType dtype;
};

struct PyIinfo {
  ug::IntInfo info;
  ug::DType dtype;
};

}  // namespace

void bind_composite(nb::module_& m, nb::class_<Tensor>& tensor) {
  auto tril = [](const Tensor& t, int64_t diagonal) { return ug::tril(t, diagonal); };
  auto triu = [](const Tensor& t, int64_t diagonal) { return ug::triu(t, diagonal); };
  auto addcmul = [](const Tensor& t, const Tensor& a, const Tensor& b, Scalar v) { return ug::addcmul(t, a, b, v); };
  auto addcdiv = [](const Tensor& t, const Tensor& a, const Tensor& b, Scalar v) { return ug::addcdiv(t, a, b, v); };
  auto scatter = [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
    return t.scatter(dim, index, src);
  };
  auto scatter_reduced = [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src,
                            std::string_view reduce) { return ug::scatter(t, dim, index, src, reduce); };
  auto scatter_value = [](const Tensor& t, int64_t dim, const Tensor& index, Scalar value) {
    return ug::scatter(t, dim, index, value);
  };
  auto scatter_value_reduced = [](const Tensor& t, int64_t dim, const Tensor& index, Scalar value,
                                  std::string_view reduce) { return ug::scatter(t, dim, index, value, reduce); };
  auto scatter_add = [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
    return t.scatter_add(dim, index, src);
  };
  auto index_add = [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, Scalar alpha) {
    return ug::index_add(t, dim, index, src, alpha);
  };
  auto index_fill = [](const Tensor& t, int64_t dim, const Tensor& index, Scalar value) {
    return ug::index_fill(t, dim, index, value);
  };
  auto masked_scatter = [](const Tensor& t, const Tensor& mask, const Tensor& source) {
    return ug::masked_scatter(t, mask, source);
  };
  auto index_put = [](const Tensor& t, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
    return ug::index_put(t, indices, values, accumulate);
  };
  auto nan_to_num = [](const Tensor& t, double nan, std::optional<double> posinf, std::optional<double> neginf) {
    return ug::nan_to_num(t, nan, posinf, neginf);
  };
  tensor.def("tril", tril, "diagonal"_a = 0)
      .def("tril_", in_place<int64_t>(tril), "diagonal"_a = 0)
      .def("triu", triu, "diagonal"_a = 0)
      .def("triu_", in_place<int64_t>(triu), "diagonal"_a = 0)
      .def("diag", &ug::diag, "diagonal"_a = 0)
      .def("trace", &ug::trace)
      .def("addmm", &ug::addmm, "mat1"_a, "mat2"_a, nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("baddbmm", &ug::baddbmm, "batch1"_a, "batch2"_a, nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("addcmul", addcmul, "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = 1)
      .def("addcmul_", in_place<const Tensor&, const Tensor&, Scalar>(addcmul), "tensor1"_a, "tensor2"_a, nb::kw_only(),
           "value"_a = 1)
      .def("addcdiv", addcdiv, "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = 1)
      .def("addcdiv_", in_place<const Tensor&, const Tensor&, Scalar>(addcdiv), "tensor1"_a, "tensor2"_a, nb::kw_only(),
           "value"_a = 1)
      .def("nan_to_num", nan_to_num, "nan"_a = 0.0, "posinf"_a = nb::none(), "neginf"_a = nb::none())
      .def("nan_to_num_", in_place<double, std::optional<double>, std::optional<double>>(nan_to_num), "nan"_a = 0.0,
           "posinf"_a = nb::none(), "neginf"_a = nb::none())
      .def(
          "nansum",
          [](const Tensor& t, nb::handle dim, bool keepdim) {
            return ug::nansum(t, optional_dims(dim, "nansum").value_or(ug::Dims{}), keepdim);
          },
          "dim"_a = nb::none(), "keepdim"_a = false)
      .def(
          "nanmean",
          [](const Tensor& t, nb::handle dim, bool keepdim) {
            return ug::nanmean(t, optional_dims(dim, "nanmean").value_or(ug::Dims{}), keepdim);
          },
          "dim"_a = nb::none(), "keepdim"_a = false)
      .def("logit", &ug::logit, "eps"_a = nb::none())
      .def("xlogy", &ug::xlogy, "other"_a)
      .def("hypot", &ug::hypot, "other"_a)
      .def("frac", &ug::frac)
      .def("lgamma", &ug::lgamma)
      .def("digamma", &ug::digamma)
      .def("erfinv", &ug::erfinv)
      .def("i0", &ug::i0)
      .def("fmod", static_cast<Tensor (*)(const Tensor&, const Tensor&)>(&ug::fmod), "other"_a)
      .def("fmod", static_cast<Tensor (*)(const Tensor&, Scalar)>(&ug::fmod), "other"_a)
      .def("fmod_", in_place<const Tensor&>(static_cast<Tensor (*)(const Tensor&, const Tensor&)>(&ug::fmod)),
           "other"_a)
      .def("fmod_", in_place<Scalar>(static_cast<Tensor (*)(const Tensor&, Scalar)>(&ug::fmod)), "other"_a)
      .def(
          "rot90",
          [](const Tensor& t, int64_t k, nb::handle dims) {
            return ug::rot90(t, k, dims_from_sequence(dims, "rot90"));
          },
          "k"_a = 1, "dims"_a = nb::make_tuple(0, 1))
      .def("kron", &ug::kron, "other"_a)
      .def("cross", &ug::cross, "other"_a, "dim"_a = nb::none())
      .def("take_along_dim", &ug::take_along_dim, "indices"_a, "dim"_a = nb::none())
      .def("isin", &ug::isin, "test_elements"_a, nb::kw_only(), "invert"_a = false)
      .def(
          "tensor_split",
          [](const Tensor& t, nb::handle indices_or_sections, int64_t dim) {
            // torch takes a number of sections, split points, or either as an integer tensor.
            nb::object spec = nb::borrow(indices_or_sections);
            if (nb::isinstance<Tensor>(spec)) spec = spec.attr("tolist")();
            const std::vector<Tensor> parts = PyLong_Check(spec.ptr())
                                                  ? ug::tensor_split(t, nb::cast<int64_t>(spec), dim)
                                                  : ug::tensor_split(t, dims_from_sequence(spec, "tensor_split"), dim);
            return nb::tuple(nb::cast(parts));
          },
          "indices_or_sections"_a, "dim"_a = 0)
      .def("masked_scatter", masked_scatter, "mask"_a, "source"_a)
      .def("masked_scatter_", in_place<const Tensor&, const Tensor&>(masked_scatter), "mask"_a, "source"_a)
      .def("index_put", index_put, "indices"_a, "values"_a, "accumulate"_a = false)
      .def("index_put_", in_place<const std::vector<Tensor>&, const Tensor&, bool>(index_put), "indices"_a, "values"_a,
           "accumulate"_a = false)
      .def(
          "new_full",
          [](const Tensor& t, nb::handle size, Scalar value, std::optional<ug::DType> dtype,
             std::optional<ug::Device> device, bool requires_grad) {
            return with_grad(ug::full(dims_from_sequence(size, "new_full"), value, like(t, dtype, device)),
                             requires_grad);
          },
          "size"_a, "fill_value"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false)
      .def(
          "new_tensor",
          [](const Tensor& t, nb::handle data, std::optional<ug::DType> dtype, std::optional<ug::Device> device,
             bool requires_grad) {
            // torch copies data, even a tensor's, and leaves it out of the graph.
            return with_grad(tensor_from_data(data, dtype.value_or(t.dtype()), device.value_or(t.device())),
                             requires_grad);
          },
          "data"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false)
      .def(
          "type_as", [](const Tensor& t, const Tensor& other) { return t.to(other.dtype()); }, "other"_a)
      // Method and in-place forms of indexing ops.
      .def("repeat_interleave",
           nb::overload_cast<const Tensor&, const Tensor&, std::optional<int64_t>, std::optional<int64_t>>(
               &ug::repeat_interleave),
           "repeats"_a, "dim"_a = nb::none(), nb::kw_only(), "output_size"_a = nb::none())
      .def("repeat_interleave",
           nb::overload_cast<const Tensor&, int64_t, std::optional<int64_t>>(&ug::repeat_interleave), "repeats"_a,
           "dim"_a = nb::none())
      .def("scatter_", in_place<int64_t, const Tensor&, const Tensor&>(scatter), "dim"_a, "index"_a, "src"_a)
      .def("scatter_", in_place<int64_t, const Tensor&, const Tensor&, std::string_view>(scatter_reduced), "dim"_a,
           "index"_a, "src"_a, nb::kw_only(), "reduce"_a)
      .def("scatter_", in_place<int64_t, const Tensor&, Scalar>(scatter_value), "dim"_a, "index"_a, "value"_a)
      .def("scatter_", in_place<int64_t, const Tensor&, Scalar, std::string_view>(scatter_value_reduced), "dim"_a,
           "index"_a, "value"_a, nb::kw_only(), "reduce"_a)
      .def("scatter_add_", in_place<int64_t, const Tensor&, const Tensor&>(scatter_add), "dim"_a, "index"_a, "src"_a)
      .def("index_add", &ug::index_add, "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = 1)
      .def("index_add_", in_place<int64_t, const Tensor&, const Tensor&, Scalar>(index_add), "dim"_a, "index"_a,
           "source"_a, nb::kw_only(), "alpha"_a = 1)
      .def("index_fill", &ug::index_fill, "dim"_a, "index"_a, "value"_a)
      .def("index_fill_", in_place<int64_t, const Tensor&, Scalar>(index_fill), "dim"_a, "index"_a, "value"_a)
      // In-place draws from the global generator (custom initialisation: w.normal_(0, 0.02)).
      .def(
          "uniform_", [](Tensor& t, double from, double to) -> Tensor& { return ug::uniform_(t, from, to); },
          "from_"_a = 0.0, "to"_a = 1.0)
      .def(
          "normal_", [](Tensor& t, double mean, double std) -> Tensor& { return ug::normal_(t, mean, std); },
          "mean"_a = 0.0, "std"_a = 1.0)
      .def(
          "bernoulli_", [](Tensor& t, double p) -> Tensor& { return ug::bernoulli_(t, p); }, "p"_a = 0.5)
      .def(
          "random_",
          [](nb::object self, nb::args args, nb::handle generator, nb::kwargs kwargs) {
            // torch's three forms: random_(), random_(to), random_(from, to) with to None for the largest
            Tensor& t = nb::cast<Tensor&>(self);
            if (args.size() == 1 && kwargs.size() == 0) {
              with_generator(generator, "random_",
                             [&]() -> Tensor& { return ug::random_(t, nb::cast<int64_t>(args[0])); });
              return self;
            }
            if (args.size() + kwargs.size() != 0 && args.size() + kwargs.size() != 2)
              ug::fail<ug::TypeError>("[random_] takes (), (to) or (from, to), as torch's Tensor.random_");
            nb::dict named;
            for (size_t i = 0; i < args.size(); ++i) named[i == 0 ? "from" : "to"] = args[i];
            for (auto [key, value] : kwargs) {
              const std::string name = nb::cast<std::string>(key);
              if (name != "from" && name != "to") ug::fail<ug::TypeError>("[random_] unexpected argument '", name, "'");
              named[key] = value;
            }
            const int64_t from = named.contains("from") ? nb::cast<int64_t>(named["from"]) : 0;
            const auto to = named.contains("to") ? nb::cast<std::optional<int64_t>>(named["to"]) : std::nullopt;
            with_generator(generator, "random_", [&]() -> Tensor& { return ug::random_(t, from, to); });
            return self;  // the same Python object, as torch's
          },
          "args"_a, "generator"_a.none() = nb::none(), "kwargs"_a)
      .def(
          "exponential_", [](Tensor& t, double lambd) -> Tensor& { return ug::exponential_(t, lambd); },
          "lambd"_a = 1.0)
      .def(
          "geometric_", [](Tensor& t, double p) -> Tensor& { return ug::geometric_(t, p); }, "p"_a)
      .def(
          "cauchy_", [](Tensor& t, double median, double sigma) -> Tensor& { return ug::cauchy_(t, median, sigma); },
          "median"_a = 0.0, "sigma"_a = 1.0)
      .def(
          "log_normal_", [](Tensor& t, double mean, double std) -> Tensor& { return ug::log_normal_(t, mean, std); },
          "mean"_a = 1.0, "std"_a = 2.0)
      .def("bernoulli", [](const Tensor& p) { return ug::bernoulli(p); })
      .def("multinomial", &ug::multinomial, "num_samples"_a, "replacement"_a = false);

  // NumPy's names, which torch keeps as aliases.
  struct Alias {
    const char* name;
    Tensor (*tensor_op)(const Tensor&, const Tensor&);
    Tensor (*scalar_op)(const Tensor&, Scalar);
  };
  for (const Alias& a : {Alias{"divide", ug::div, ug::div}, Alias{"true_divide", ug::div, ug::div},
                         Alias{"multiply", ug::mul, ug::mul}, Alias{"subtract", ug::sub, ug::sub}})
    tensor.def(a.name, a.tensor_op, "other"_a).def(a.name, a.scalar_op, "other"_a);
  tensor.def("ravel", [](const Tensor& t) { return t.flatten(); });
  // Factories in this tensor's dtype and device unless told otherwise (torch's new_*).
  struct Factory {
    const char* name;
    Tensor (*make)(const ug::Dims&, ug::Options);
  };
  for (const Factory& f :
       {Factory{"new_zeros", ug::zeros}, Factory{"new_ones", ug::ones}, Factory{"new_empty", ug::empty}})
    tensor.def(
        f.name,
        [f](const Tensor& t, nb::args size, std::optional<ug::DType> dtype, std::optional<ug::Device> device,
            bool requires_grad) {
          return with_grad(f.make(dims_from_args(size, f.name), like(t, dtype, device)), requires_grad);
        },
        "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);

  m.def("cdist", &ug::cdist, "x1"_a, "x2"_a, "p"_a = 2.0, "compute_mode"_a = "use_mm_for_euclid_dist_if_necessary",
        "The p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M] (torch.cdist).");
  m.def(
      "meshgrid",
      [](nb::args tensors, std::optional<std::string> indexing) {
        // torch takes meshgrid(x, y) and meshgrid([x, y]).
        nb::handle items = tensors.size() == 1 && !nb::isinstance<Tensor>(tensors[0]) ? tensors[0] : tensors;
        return ug::meshgrid(nb::cast<std::vector<Tensor>>(items), indexing.value_or("ij"));
      },
      "tensors"_a, "indexing"_a = nb::none(),
      "Coordinate grids from 1-d tensors (torch.meshgrid; indexing 'ij' or 'xy').");

  nb::class_<PyFinfo>(m, "finfo", "A floating dtype's limits (torch.finfo): bits, eps, max, min, tiny, resolution.")
      .def(
          "__init__",
          [](PyFinfo* f, std::optional<ug::DType> type) {
            const ug::DType dtype = type.value_or(ug::get_default_dtype());
            new (f) PyFinfo{ug::finfo(dtype), dtype};
          },
          "type"_a = nb::none())
      .def_prop_ro("bits", [](const PyFinfo& f) { return f.info.bits; })
      .def_prop_ro("eps", [](const PyFinfo& f) { return f.info.eps; })
      .def_prop_ro("max", [](const PyFinfo& f) { return f.info.max; })
      .def_prop_ro("min", [](const PyFinfo& f) { return f.info.min; })
      .def_prop_ro("tiny", [](const PyFinfo& f) { return f.info.tiny; })
      .def_prop_ro("smallest_normal", [](const PyFinfo& f) { return f.info.tiny; })
      .def_prop_ro("resolution", [](const PyFinfo& f) { return f.info.resolution; })
      .def_prop_ro("dtype", [](const PyFinfo& f) { return std::string(ug::dtype_name(f.dtype)); });
  nb::class_<PyIinfo>(m, "iinfo", "An integer dtype's limits (torch.iinfo): bits, min, max.")
      .def(
          "__init__",
          [](PyIinfo* i, ug::DType dtype) {
            new (i) PyIinfo{ug::iinfo(dtype), dtype};
          },
          "type"_a)
      .def_prop_ro("bits", [](const PyIinfo& i) { return i.info.bits; })
      .def_prop_ro("min", [](const PyIinfo& i) { return i.info.min; })
      .def_prop_ro("max", [](const PyIinfo& i) { return i.info.max; })
      .def_prop_ro("dtype", [](const PyIinfo& i) { return std::string(ug::dtype_name(i.dtype)); });
}

}  // namespace ugpy
