// The order statistics, uniqueness, counting, searching and running extremes of
// ops/composite.h (composite_order.cpp) as Tensor methods under torch's names, and
// searchsorted / bucketize / histogramdd, which torch has as functions only; python/unigrad/__init__.py
// makes the function forms of the methods.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/ops/composite.h"

namespace ugpy {

namespace {

using ug::Tensor;
using namespace nb::literals;

// Borrowed: owned by the module attribute _histogram_type.
nb::handle g_histogram, g_histogramdd;

nb::object values_indices(const std::pair<Tensor, Tensor>& p) { return values_indices_type()(p.first, p.second); }

/** unique's result as torch gives it: the values alone, or a tuple with what was asked for. */
nb::object unique_result(const std::tuple<Tensor, Tensor, Tensor>& r, bool return_inverse, bool return_counts) {
  if (!return_inverse && !return_counts) return nb::cast(std::get<0>(r));
  if (return_inverse && return_counts) return nb::make_tuple(std::get<0>(r), std::get<1>(r), std::get<2>(r));
  return nb::make_tuple(std::get<0>(r), return_inverse ? std::get<1>(r) : std::get<2>(r));
}

/** A median-like reduction: a 0-d tensor without dim, (values, indices) along one. */
template <auto whole, auto along> nb::object reduction(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return nb::cast(whole(t));
  return values_indices(along(t, *dim, keepdim));
}

/** q as torch takes it: a float or a tensor. */
template <auto with_tensor, auto with_float>
Tensor quantile_call(const Tensor& t, nb::handle q, std::optional<int64_t> dim, bool keepdim,
                     std::string_view interpolation) {
  if (nb::isinstance<Tensor>(q)) return with_tensor(t, nb::cast<Tensor>(q), dim, keepdim, interpolation);
  return with_float(t, nb::cast<double>(q), dim, keepdim, interpolation);
}

}  // namespace

void bind_composite_order(nb::module_& m, nb::class_<Tensor>& tensor) {
  using Reduce = std::pair<Tensor, Tensor> (*)(const Tensor&, int64_t, bool);
  using Whole = Tensor (*)(const Tensor&);
  using Quantile = Tensor (*)(const Tensor&, const Tensor&, std::optional<int64_t>, bool, std::string_view);
  using QuantileF = Tensor (*)(const Tensor&, double, std::optional<int64_t>, bool, std::string_view);
  nb::object histogram_type =
      nb::module_::import_("collections").attr("namedtuple")("histogram", nb::make_tuple("hist", "bin_edges"));
  histogram_type.attr("__module__") = "unigrad.return_types";
  m.attr("_histogram_type") = histogram_type;
  g_histogram = m.attr("_histogram_type");
  tensor
      .def("median", reduction<static_cast<Whole>(ug::median), static_cast<Reduce>(ug::median)>, "dim"_a = nb::none(),
           "keepdim"_a = false)
      .def("nanmedian", reduction<static_cast<Whole>(ug::nanmedian), static_cast<Reduce>(ug::nanmedian)>,
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def(
          "kthvalue",
          [](const Tensor& t, int64_t k, int64_t dim, bool keepdim) {
            return values_indices(ug::kthvalue(t, k, dim, keepdim));
          },
          "k"_a, "dim"_a = -1, "keepdim"_a = false)
      .def(
          "mode", [](const Tensor& t, int64_t dim, bool keepdim) { return values_indices(ug::mode(t, dim, keepdim)); },
          "dim"_a = -1, "keepdim"_a = false)
      .def("quantile", quantile_call<static_cast<Quantile>(ug::quantile), static_cast<QuantileF>(ug::quantile)>, "q"_a,
           "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "interpolation"_a = "linear")
      .def("nanquantile",
           quantile_call<static_cast<Quantile>(ug::nanquantile), static_cast<QuantileF>(ug::nanquantile)>, "q"_a,
           "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "interpolation"_a = "linear")
      .def(
          "unique",
          [](const Tensor& t, bool sorted, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
            return unique_result(ug::unique(t, sorted, return_inverse, return_counts, dim), return_inverse,
                                 return_counts);
          },
          "sorted"_a = true, "return_inverse"_a = false, "return_counts"_a = false, "dim"_a = nb::none())
      .def(
          "unique_consecutive",
          [](const Tensor& t, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
            return unique_result(ug::unique_consecutive(t, return_inverse, return_counts, dim), return_inverse,
                                 return_counts);
          },
          "return_inverse"_a = false, "return_counts"_a = false, "dim"_a = nb::none())
      .def("bincount", &ug::bincount, "weights"_a = nb::none(), "minlength"_a = 0)
      .def("histc", &ug::histc, "bins"_a = 100, "min"_a = 0, "max"_a = 0)
      .def(
          "histogram",
          [](const Tensor& t, nb::handle bins, std::optional<std::pair<double, double>> range,
             std::optional<Tensor> weight, bool density) {
            const auto [hist, edges] = nb::isinstance<Tensor>(bins)
                                           ? ug::histogram(t, nb::cast<Tensor>(bins), weight, density)
                                           : ug::histogram(t, nb::cast<int64_t>(bins), range, weight, density);
            return nb::borrow(g_histogram)(hist, edges);
          },
          "bins"_a, nb::kw_only(), "range"_a = nb::none(), "weight"_a = nb::none(), "density"_a = false)
      .def(
          "cummax", [](const Tensor& t, int64_t dim) { return values_indices(ug::cummax(t, dim)); }, "dim"_a)
      .def(
          "cummin", [](const Tensor& t, int64_t dim) { return values_indices(ug::cummin(t, dim)); }, "dim"_a)
      .def("logcumsumexp", &ug::logcumsumexp, "dim"_a);

  m.def(
      "searchsorted",
      [](const Tensor& sorted_sequence, nb::handle input, bool out_int32, bool right, std::optional<std::string> side,
         std::optional<Tensor> sorter) {
        std::optional<std::string_view> s;
        if (side) s = *side;
        if (nb::isinstance<Tensor>(input))
          return ug::searchsorted(sorted_sequence, nb::cast<Tensor>(input), out_int32, right, s, sorter);
        return ug::searchsorted(sorted_sequence, nb::cast<ug::Scalar>(input), out_int32, right, s, sorter);
      },
      "sorted_sequence"_a, "input"_a, nb::kw_only(), "out_int32"_a = false, "right"_a = false, "side"_a = nb::none(),
      "sorter"_a = nb::none(),
      "Where input's values would go into sorted_sequence's last dim to keep it sorted (torch.searchsorted).");
  nb::object histogramdd_type =
      nb::module_::import_("collections").attr("namedtuple")("histogramdd", nb::make_tuple("hist", "bin_edges"));
  histogramdd_type.attr("__module__") = "unigrad.return_types";
  m.attr("_histogramdd_type") = histogramdd_type;
  g_histogramdd = m.attr("_histogramdd_type");
  m.def(
      "histogramdd",
      [](const Tensor& input, nb::handle bins, std::optional<std::vector<double>> range, std::optional<Tensor> weight,
         bool density) {
        std::pair<Tensor, std::vector<Tensor>> r;
        if (PyLong_Check(bins.ptr())) {  // one count for every dim
          const size_t dims = input.dim() ? static_cast<size_t>(input.size(-1)) : 0;
          r = ug::histogramdd(input, std::vector<int64_t>(dims, nb::cast<int64_t>(bins)), range, weight, density);
        } else if (nb::len(bins) && nb::isinstance<Tensor>(bins[0])) {
          r = ug::histogramdd(input, nb::cast<std::vector<Tensor>>(bins), weight, density);
        } else {
          r = ug::histogramdd(input, nb::cast<std::vector<int64_t>>(bins), range, weight, density);
        }
        return nb::borrow(g_histogramdd)(r.first, nb::tuple(nb::cast(r.second)));
      },
      "input"_a, "bins"_a, nb::kw_only(), "range"_a = nb::none(), "weight"_a = nb::none(), "density"_a = false,
      "A d-dimensional histogram of input's points, the rows of its last dim: (hist, bin_edges), one tuple of edges "
      "per dim (torch.histogramdd).");
  m.def("bucketize", &ug::bucketize, "input"_a, "boundaries"_a, nb::kw_only(), "out_int32"_a = false, "right"_a = false,
        "The bucket of each element among 1-d sorted boundaries (torch.bucketize).");
}

}  // namespace ugpy
