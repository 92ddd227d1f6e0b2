// Module functions with no Tensor-method form: joins, padding, einsum.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace ugpy {

void bind_functions(nb::module_& m) {
  using ug::Tensor;
  using Tensors = std::vector<Tensor>;
  m.def(
      "cat", [](const Tensors& ts, int64_t dim) { return ug::cat(ts, dim); }, nb::arg("tensors"), nb::arg("dim") = 0);
  m.def(
      "concat", [](const Tensors& ts, int64_t dim) { return ug::cat(ts, dim); }, nb::arg("tensors"),
      nb::arg("dim") = 0);
  m.def(
      "concatenate", [](const Tensors& ts, int64_t dim) { return ug::cat(ts, dim); }, nb::arg("tensors"),
      nb::arg("axis") = 0);
  m.def(
      "stack", [](const Tensors& ts, int64_t dim) { return ug::stack(ts, dim); }, nb::arg("tensors"),
      nb::arg("dim") = 0);
  m.def("hstack", &ug::hstack, nb::arg("tensors"));
  m.def("vstack", &ug::vstack, nb::arg("tensors"));
  m.def("dstack", &ug::dstack, nb::arg("tensors"));
  m.def("atleast_1d", &ug::atleast_1d);
  m.def("atleast_2d", &ug::atleast_2d);
  m.def("atleast_3d", &ug::atleast_3d);
  m.def(
      "pad",
      [](const Tensor& x, nb::handle pads, const std::string& mode, std::optional<double> value) {
        return ug::pad(x, dims_from_sequence(pads, "pad"), mode,
                       value ? std::optional<ug::Scalar>(*value) : std::nullopt);
      },
      nb::arg("input"), nb::arg("pad"), nb::arg("mode") = "constant", nb::arg("value") = nb::none());
  m.def(
      "einsum",
      [](const std::string& eq, nb::args operands) {
        Tensors ts;
        if (operands.size() == 1 && !nb::isinstance<Tensor>(operands[0])) ts = nb::cast<Tensors>(operands[0]);
        else ts = nb::cast<Tensors>(operands);
        return ug::einsum(eq, ts);
      },
      nb::arg("equation"), nb::arg("operands"));
  m.def("take", &ug::take, nb::arg("input"), nb::arg("index"));
  m.def("put", &ug::put, nb::arg("input"), nb::arg("index"), nb::arg("source"), nb::arg("accumulate") = false);
  m.def("fliplr", &ug::fliplr);
  m.def("flipud", &ug::flipud);
  m.def("repeat_interleave",
        nb::overload_cast<const Tensor&, const Tensor&, std::optional<int64_t>, std::optional<int64_t>>(
            &ug::repeat_interleave),
        nb::arg("input"), nb::arg("repeats"), nb::arg("dim") = nb::none(), nb::kw_only(),
        nb::arg("output_size") = nb::none());
  m.def(
      "repeat_interleave",
      [](const Tensor& x, int64_t repeats, std::optional<int64_t> dim, std::optional<int64_t> output_size) {
        if (output_size)  // checked against the length as the tensor form checks it
          return ug::repeat_interleave(x, ug::scalar_tensor(repeats, {.dtype = ug::DType::Int64}), dim, output_size);
        return ug::repeat_interleave(x, repeats, dim);
      },
      nb::arg("input"), nb::arg("repeats"), nb::arg("dim") = nb::none(), nb::kw_only(),
      nb::arg("output_size") = nb::none());
  m.def("repeat_interleave", nb::overload_cast<const Tensor&, std::optional<int64_t>>(&ug::repeat_interleave),
        nb::arg("repeats"), nb::kw_only(), nb::arg("output_size") = nb::none());
  m.def("argwhere", &ug::argwhere);
  m.def(
      "count_nonzero",
      [](const Tensor& x, nb::handle dim) {
        return dim.is_none() ? ug::count_nonzero(x) : ug::count_nonzero(x, dims_from_sequence(dim, "count_nonzero"));
      },
      nb::arg("input"), nb::arg("dim") = nb::none());
}

}  // namespace ugpy
