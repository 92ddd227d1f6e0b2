// The products, matrix builders, statistics, elementwise helpers and scatters of
// ops/composite_math.h: Tensor methods where torch has them (python/unigrad/__init__.py makes
// their function forms), module functions where torch has only those.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/indexing.h"
#include "ug/autograd/special.h"
#include "ug/ops/view.h"

namespace ugpy {

namespace {

using ug::Scalar;
using ug::Tensor;
using namespace nb::literals;

// Borrowed: owned by the module attribute _aminmax_type.
nb::handle g_aminmax;
// Borrowed: owned by the module attribute _frexp_type.
nb::handle g_frexp;

/** torch's *tensors arguments: f(a, b) and f([a, b]). */
std::vector<Tensor> tensors_of(const nb::args& args) {
  nb::handle items = args.size() == 1 && !nb::isinstance<Tensor>(args[0]) ? args[0] : nb::handle(args);
  return nb::cast<std::vector<Tensor>>(items);
}

/** hsplit and friends: a number of equal sections or a list of split points. */
template <auto by_count, auto by_points> nb::tuple split_call(const Tensor& t, nb::handle spec, const char* op) {
  if (PyLong_Check(spec.ptr())) return nb::tuple(nb::cast(by_count(t, nb::cast<int64_t>(spec))));
  return nb::tuple(nb::cast(by_points(t, dims_from_sequence(spec, op))));
}

ug::Dims dims_of(nb::handle h, const char* op) {
  if (PyLong_Check(h.ptr())) return {nb::cast<int64_t>(h)};
  return dims_from_sequence(h, op);
}

ug::Options options(std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
  return {dtype, device.value_or(ug::Device())};
}

/** A method's in-place form (taking arguments of types A): the result written into the tensor,
 *  which must hold its dtype without narrowing (no float into an integer, nothing into bool). */
template <class... A, class F> auto in_place(const char* name, F f) {
  return [name, f](Tensor& t, A... args) -> Tensor& {
    const Tensor result = f(ugpy::operand_of_in_place(t, args...), args...);
    if ((result.is_floating_point() && !t.is_floating_point()) ||
        (t.dtype() == ug::DType::Bool && result.dtype() != ug::DType::Bool))
      ug::fail<ug::RuntimeError>("[", name, "] the result's dtype ", result.dtype(), " cannot be written into a ",
                                 t.dtype(), " tensor of shape ", t.shape());
    return t.copy_(result);
  };
}

/** float_power for float_power_: torch writes only into a float64 base, the result's dtype. */
template <class E> Tensor float_power_of(const Tensor& base, E exponent) {
  if (base.dtype() != ug::DType::Float64)
    ug::fail<ug::RuntimeError>("[float_power_] the base must be float64, the result's dtype, got ", base.dtype(),
                               " of shape ", base.shape());
  return ug::float_power(base, exponent);
}

Tensor with_grad(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

/** zeta and xlog1py take a number for either argument, as torch's: the number
 *  becomes a 0-d tensor of the other's dtype (float32 beside an integer tensor when it is
 *  floating). */
using Binary = Tensor (*)(const Tensor&, const Tensor&);
Tensor beside(const Tensor& t, nb::handle value) {
  if (nb::isinstance<Tensor>(value)) return nb::cast<Tensor>(value);
  const Scalar s = nb::cast<Scalar>(value);
  const ug::DType dtype = t.is_floating_point() || !s.is_floating() ? t.dtype() : ug::DType::Float32;
  return ug::full({}, s, {.dtype = dtype, .device = t.device()});
}
template <Binary f> Tensor binary_special(nb::handle a, nb::handle b, const char* op) {
  if (nb::isinstance<Tensor>(a)) return f(nb::cast<Tensor>(a), beside(nb::cast<Tensor>(a), b));
  if (nb::isinstance<Tensor>(b)) return f(beside(nb::cast<Tensor>(b), a), nb::cast<Tensor>(b));
  ug::fail<ug::TypeError>("[", op, "] needs a tensor for at least one argument");
}

}  // namespace

void bind_composite_math(nb::module_& m, nb::class_<Tensor>& tensor) {
  using Split = std::vector<Tensor> (*)(const Tensor&, int64_t);
  using SplitAt = std::vector<Tensor> (*)(const Tensor&, const ug::Dims&);
  using TT = Tensor (*)(const Tensor&, const Tensor&);
  using TS = Tensor (*)(const Tensor&, Scalar);
  nb::object aminmax_type =
      nb::module_::import_("collections").attr("namedtuple")("aminmax", nb::make_tuple("min", "max"));
  aminmax_type.attr("__module__") = "unigrad.return_types";
  m.attr("_aminmax_type") = aminmax_type;
  g_aminmax = m.attr("_aminmax_type");
  nb::object frexp_type =
      nb::module_::import_("collections").attr("namedtuple")("frexp", nb::make_tuple("mantissa", "exponent"));
  frexp_type.attr("__module__") = "unigrad.return_types";
  m.attr("_frexp_type") = frexp_type;
  g_frexp = m.attr("_frexp_type");
  using Rounding = std::optional<std::string_view>;
  using DivT = Tensor (*)(const Tensor&, const Tensor&, Rounding);
  using DivS = Tensor (*)(const Tensor&, Scalar, Rounding);
  auto frexp = [](const Tensor& t) {
    auto [mantissa, exponent] = ug::frexp(t);
    return nb::borrow(g_frexp)(mantissa, exponent);
  };
  auto movedim = [](const Tensor& t, const std::vector<int64_t>& source, const std::vector<int64_t>& destination) {
    return ug::movedim(t, ug::Dims(source.begin(), source.end()), ug::Dims(destination.begin(), destination.end()));
  };

  tensor.def("inner", &ug::inner, "other"_a)
      .def("mv", &ug::mv, "vec"_a)
      .def("addmv", &ug::addmv, "mat"_a, "vec"_a, nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("addr", &ug::addr, "vec1"_a, "vec2"_a, nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("addbmm", &ug::addbmm, "batch1"_a, "batch2"_a, nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("vdot", &ug::vdot, "other"_a)
      .def("diag_embed", &ug::diag_embed, "offset"_a = 0, "dim1"_a = -2, "dim2"_a = -1)
      .def("diagflat", &ug::diagflat, "offset"_a = 0)
      .def("cov", &ug::cov, nb::kw_only(), "correction"_a = 1, "fweights"_a = nb::none(), "aweights"_a = nb::none())
      .def("corrcoef", &ug::corrcoef)
      .def("dist", &ug::dist, "other"_a, "p"_a = 2.0)
      .def("diff", &ug::diff, "n"_a = 1, "dim"_a = -1, "prepend"_a = nb::none(), "append"_a = nb::none())
      .def("renorm", &ug::renorm, "p"_a, "dim"_a, "maxnorm"_a)
      .def("erfc", &ug::erfc)
      .def("deg2rad", &ug::deg2rad)
      .def("rad2deg", &ug::rad2deg)
      .def("sgn", &ug::sgn)
      .def("signbit", &ug::signbit)
      .def("sinc", &ug::sinc)
      .def("copysign", static_cast<TT>(&ug::copysign), "other"_a)
      .def("copysign", static_cast<TS>(&ug::copysign), "other"_a)
      .def("heaviside", &ug::heaviside, "values"_a)
      .def("float_power", static_cast<TT>(&ug::float_power), "exponent"_a)
      .def("float_power", static_cast<TS>(&ug::float_power), "exponent"_a)
      .def("fmax", &ug::fmax, "other"_a)
      .def("fmin", &ug::fmin, "other"_a)
      .def("logaddexp2", &ug::logaddexp2, "other"_a)
      .def("positive", &ug::positive)
      .def("isposinf", &ug::isposinf)
      .def("isneginf", &ug::isneginf)
      .def("isreal", &ug::isreal)
      .def("is_complex", [](const Tensor& t) { return ug::is_complex(t.dtype()); })
      .def("is_nonzero", &ug::is_nonzero)
      .def("ldexp", &ug::ldexp, "other"_a)
      .def("mvlgamma", &ug::mvlgamma, "p"_a)
      .def(
          "aminmax",
          [](const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
            auto [lo, hi] = ug::aminmax(t, dim, keepdim);
            return nb::borrow(g_aminmax)(lo, hi);
          },
          nb::kw_only(), "dim"_a = nb::none(), "keepdim"_a = false)
      .def(
          "hsplit",
          [](const Tensor& t, nb::handle spec) {
            return split_call<static_cast<Split>(ug::hsplit), static_cast<SplitAt>(ug::hsplit)>(t, spec, "hsplit");
          },
          "indices_or_sections"_a)
      .def(
          "vsplit",
          [](const Tensor& t, nb::handle spec) {
            return split_call<static_cast<Split>(ug::vsplit), static_cast<SplitAt>(ug::vsplit)>(t, spec, "vsplit");
          },
          "indices_or_sections"_a)
      .def(
          "dsplit",
          [](const Tensor& t, nb::handle spec) {
            return split_call<static_cast<Split>(ug::dsplit), static_cast<SplitAt>(ug::dsplit)>(t, spec, "dsplit");
          },
          "indices_or_sections"_a)
      .def("msort", &ug::msort)
      .def("slice_scatter", &ug::slice_scatter, "src"_a, "dim"_a = 0, "start"_a = nb::none(), "end"_a = nb::none(),
           "step"_a = 1)
      .def("select_scatter", &ug::select_scatter, "src"_a, "dim"_a, "index"_a)
      .def("diagonal_scatter", &ug::diagonal_scatter, "src"_a, "offset"_a = 0, "dim1"_a = 0, "dim2"_a = 1)
      .def(
          "as_strided_scatter",
          [](const Tensor& t, const Tensor& src, nb::handle size, nb::handle stride,
             std::optional<int64_t> storage_offset) {
            return ug::as_strided_scatter(t, src, dims_from_sequence(size, "as_strided_scatter"),
                                          dims_from_sequence(stride, "as_strided_scatter"), storage_offset);
          },
          "src"_a, "size"_a, "stride"_a, "storage_offset"_a = nb::none())
      .def("put", &ug::put, "index"_a, "source"_a, "accumulate"_a = false)
      .def("put_", in_place<const Tensor&, const Tensor&, bool>("put_", &ug::put), "index"_a, "source"_a,
           "accumulate"_a = false)
      .def("index_copy", &ug::index_copy, "dim"_a, "index"_a, "source"_a)
      .def("index_copy_", in_place<int64_t, const Tensor&, const Tensor&>("index_copy_", &ug::index_copy), "dim"_a,
           "index"_a, "source"_a)
      .def("index_reduce", &ug::index_reduce, "dim"_a, "index"_a, "source"_a, "reduce"_a, nb::kw_only(),
           "include_self"_a = true)
      .def("index_reduce_",
           in_place<int64_t, const Tensor&, const Tensor&, std::string_view, bool>("index_reduce_", &ug::index_reduce),
           "dim"_a, "index"_a, "source"_a, "reduce"_a, nb::kw_only(), "include_self"_a = true)
      .def("scatter_reduce", &ug::scatter_reduce, "dim"_a, "index"_a, "src"_a, "reduce"_a, nb::kw_only(),
           "include_self"_a = true)
      .def("scatter_reduce_",
           in_place<int64_t, const Tensor&, const Tensor&, std::string_view, bool>("scatter_reduce_",
                                                                                   &ug::scatter_reduce),
           "dim"_a, "index"_a, "src"_a, "reduce"_a, nb::kw_only(), "include_self"_a = true)
      .def("addmv_", in_place<const Tensor&, const Tensor&, Scalar, Scalar>("addmv_", &ug::addmv), "mat"_a, "vec"_a,
           nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("addr_", in_place<const Tensor&, const Tensor&, Scalar, Scalar>("addr_", &ug::addr), "vec1"_a, "vec2"_a,
           nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("addbmm_", in_place<const Tensor&, const Tensor&, Scalar, Scalar>("addbmm_", &ug::addbmm), "batch1"_a,
           "batch2"_a, nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
      .def("renorm_", in_place<double, int64_t, double>("renorm_", &ug::renorm), "p"_a, "dim"_a, "maxnorm"_a)
      .def("erfc_", in_place<>("erfc_", &ug::erfc))
      .def("deg2rad_", in_place<>("deg2rad_", &ug::deg2rad))
      .def("rad2deg_", in_place<>("rad2deg_", &ug::rad2deg))
      .def("sgn_", in_place<>("sgn_", &ug::sgn))
      .def("sinc_", in_place<>("sinc_", &ug::sinc))
      .def("negative_", in_place<>("negative_", [](const Tensor& t) { return -t; }))
      .def("copysign_", in_place<const Tensor&>("copysign_", static_cast<TT>(&ug::copysign)), "other"_a)
      .def("copysign_", in_place<Scalar>("copysign_", static_cast<TS>(&ug::copysign)), "other"_a)
      .def("heaviside_", in_place<const Tensor&>("heaviside_", &ug::heaviside), "values"_a)
      .def("float_power_", in_place<const Tensor&>("float_power_", float_power_of<Tensor>), "exponent"_a)
      .def("float_power_", in_place<Scalar>("float_power_", float_power_of<Scalar>), "exponent"_a)
      .def("ldexp_", in_place<const Tensor&>("ldexp_", &ug::ldexp), "other"_a)
      .def("mvlgamma_", in_place<int64_t>("mvlgamma_", &ug::mvlgamma), "p"_a)
      // div with rounding_mode, round with decimals: the plain forms are the elementwise ops'.
      .def("div", static_cast<DivT>(&ug::div), "other"_a, nb::kw_only(), "rounding_mode"_a.none() = nb::none())
      .def("div", static_cast<DivS>(&ug::div), "other"_a, nb::kw_only(), "rounding_mode"_a.none() = nb::none())
      .def("div_", in_place<const Tensor&, Rounding>("div_", static_cast<DivT>(&ug::div)), "other"_a, nb::kw_only(),
           "rounding_mode"_a.none() = nb::none())
      .def("div_", in_place<Scalar, Rounding>("div_", static_cast<DivS>(&ug::div)), "other"_a, nb::kw_only(),
           "rounding_mode"_a.none() = nb::none())
      .def("round", static_cast<Tensor (*)(const Tensor&, int64_t)>(&ug::round), nb::kw_only(), "decimals"_a)
      .def("round_", in_place<int64_t>("round_", static_cast<Tensor (*)(const Tensor&, int64_t)>(&ug::round)),
           nb::kw_only(), "decimals"_a)
      .def("frexp", frexp)
      .def("nextafter", &ug::nextafter, "other"_a)
      .def("nextafter_", in_place<const Tensor&>("nextafter_", &ug::nextafter), "other"_a)
      .def("gcd", &ug::gcd, "other"_a)
      .def("gcd_", in_place<const Tensor&>("gcd_", &ug::gcd), "other"_a)
      .def("lcm", &ug::lcm, "other"_a)
      .def("lcm_", in_place<const Tensor&>("lcm_", &ug::lcm), "other"_a)
      .def("clamp_min", static_cast<TS>(&ug::clamp_min), "min"_a)
      .def("clamp_min", static_cast<TT>(&ug::clamp_min), "min"_a)
      .def("clamp_max", static_cast<TS>(&ug::clamp_max), "max"_a)
      .def("clamp_max", static_cast<TT>(&ug::clamp_max), "max"_a)
      .def("clamp_min_", in_place<Scalar>("clamp_min_", static_cast<TS>(&ug::clamp_min)), "min"_a)
      .def("clamp_min_", in_place<const Tensor&>("clamp_min_", static_cast<TT>(&ug::clamp_min)), "min"_a)
      .def("clamp_max_", in_place<Scalar>("clamp_max_", static_cast<TS>(&ug::clamp_max)), "max"_a)
      .def("clamp_max_", in_place<const Tensor&>("clamp_max_", static_cast<TT>(&ug::clamp_max)), "max"_a)
      // movedim and moveaxis with sequences of dims: the int forms are Tensor's own.
      .def("movedim", movedim, "source"_a, "destination"_a)
      .def("moveaxis", movedim, "source"_a, "destination"_a)
      .def("igamma", &ug::igamma, "other"_a)
      .def("igammac", &ug::igammac, "other"_a)
      .def("igamma_", in_place<const Tensor&>("igamma_", &ug::igamma), "other"_a)
      .def("igammac_", in_place<const Tensor&>("igammac_", &ug::igammac), "other"_a)
      .def(
          "polygamma", [](const Tensor& t, int64_t n) { return ug::polygamma(n, t); }, "n"_a)
      .def("polygamma_",
           in_place<int64_t>("polygamma_", [](const Tensor& t, int64_t n) { return ug::polygamma(n, t); }), "n"_a);

  m.def("polygamma", &ug::polygamma, "n"_a, "input"_a, "The n-th derivative of digamma (torch.polygamma).");

  nb::module_ sp = m.def_submodule("_special", "ug/autograd/special.h, wrapped by unigrad/special.py");
  sp.def("gammainc", &ug::igamma, "input"_a, "other"_a);
  sp.def("gammaincc", &ug::igammac, "input"_a, "other"_a);
  sp.def(
      "zeta", [](nb::handle x, nb::handle q) { return binary_special<&ug::special::zeta>(x, q, "zeta"); }, "input"_a,
      "other"_a);
  sp.def(
      "xlog1py", [](nb::handle x, nb::handle y) { return binary_special<&ug::special::xlog1py>(x, y, "xlog1py"); },
      "input"_a, "other"_a);
  sp.def("entr", &ug::special::entr, "input"_a);
  sp.def("ndtr", &ug::special::ndtr, "input"_a);
  sp.def("log_ndtr", &ug::special::log_ndtr, "input"_a);
  sp.def("ndtri", &ug::special::ndtri, "input"_a);
  sp.def("erfcx", &ug::special::erfcx, "input"_a);
  sp.def("i0e", &ug::special::i0e, "input"_a);
  sp.def("i1", &ug::special::i1, "input"_a);
  sp.def("i1e", &ug::special::i1e, "input"_a);
  for (auto [name, f] : {std::pair{"bessel_j0", &ug::special::bessel_j0},
                         {"bessel_j1", &ug::special::bessel_j1},
                         {"bessel_y0", &ug::special::bessel_y0},
                         {"bessel_y1", &ug::special::bessel_y1},
                         {"modified_bessel_i0", &ug::special::modified_bessel_i0},
                         {"modified_bessel_i1", &ug::special::modified_bessel_i1},
                         {"modified_bessel_k0", &ug::special::modified_bessel_k0},
                         {"modified_bessel_k1", &ug::special::modified_bessel_k1},
                         {"scaled_modified_bessel_k0", &ug::special::scaled_modified_bessel_k0},
                         {"scaled_modified_bessel_k1", &ug::special::scaled_modified_bessel_k1},
                         {"spherical_bessel_j0", &ug::special::spherical_bessel_j0},
                         {"airy_ai", &ug::special::airy_ai}})
    sp.def(name, f, "input"_a);
    // torch's polynomials take a number for x or n too
#define UG_POLYNOMIAL(name)                                                                                         \
  sp.def(                                                                                                           \
      #name, [](nb::handle x, nb::handle n) { return binary_special<&ug::special::name>(x, n, #name); }, "input"_a, \
      "n"_a);
  UG_POLYNOMIAL(chebyshev_polynomial_t)
  UG_POLYNOMIAL(chebyshev_polynomial_u)
  UG_POLYNOMIAL(chebyshev_polynomial_v)
  UG_POLYNOMIAL(chebyshev_polynomial_w)
  UG_POLYNOMIAL(shifted_chebyshev_polynomial_t)
  UG_POLYNOMIAL(shifted_chebyshev_polynomial_u)
  UG_POLYNOMIAL(shifted_chebyshev_polynomial_v)
  UG_POLYNOMIAL(shifted_chebyshev_polynomial_w)
  UG_POLYNOMIAL(hermite_polynomial_h)
  UG_POLYNOMIAL(hermite_polynomial_he)
  UG_POLYNOMIAL(laguerre_polynomial_l)
  UG_POLYNOMIAL(legendre_polynomial_p)
#undef UG_POLYNOMIAL

  m.def("div", static_cast<DivT>(&ug::div), "input"_a, "other"_a, nb::kw_only(), "rounding_mode"_a.none() = nb::none(),
        "input / other, rounded as rounding_mode says: None, 'trunc' or 'floor' (torch.div).");
  m.def("div", static_cast<DivS>(&ug::div), "input"_a, "other"_a, nb::kw_only(), "rounding_mode"_a.none() = nb::none());
  m.def("round", static_cast<Tensor (*)(const Tensor&, int64_t)>(&ug::round), "input"_a, nb::kw_only(), "decimals"_a,
        "input rounded half to even at `decimals` decimal places (torch.round).");

  m.def(
      "tensordot",
      [](const Tensor& a, const Tensor& b, nb::handle dims) {
        if (nb::isinstance<Tensor>(dims)) dims = dims.attr("tolist")();
        if (PyLong_Check(dims.ptr())) return ug::tensordot(a, b, nb::cast<int64_t>(dims));
        if (nb::len(dims) != 2) throw nb::value_error("[tensordot] dims must be an int or a pair of dim lists");
        return ug::tensordot(a, b, dims_of(dims[0], "tensordot"), dims_of(dims[1], "tensordot"));
      },
      "a"_a, "b"_a, "dims"_a = 2,
      "The sum over the last `dims` dims of a and the first of b, or over the paired dim lists (torch.tensordot).");
  m.def(
      "chain_matmul", [](nb::args matrices) { return ug::chain_matmul(tensors_of(matrices)); }, "matrices"_a,
      "The product of 2-d matrices in the cheapest order (torch.chain_matmul).");
  m.def(
      "block_diag", [](nb::args tensors) { return ug::block_diag(tensors_of(tensors)); }, "tensors"_a,
      "The block-diagonal matrix of 0-, 1- and 2-d blocks (torch.block_diag).");
  m.def("vander", &ug::vander, "x"_a, "N"_a = nb::none(), "increasing"_a = false,
        "The Vandermonde matrix of a 1-d x (torch.vander).");
  m.def(
      "trapezoid",
      [](const Tensor& y, std::optional<Tensor> x, std::optional<Scalar> dx, int64_t dim) {
        if (x && dx) throw nb::type_error("[trapezoid] takes x or dx, not both");
        return x ? ug::trapezoid(y, *x, dim) : ug::trapezoid(y, dx.value_or(Scalar(1)), dim);
      },
      "y"_a, "x"_a = nb::none(), nb::kw_only(), "dx"_a = nb::none(), "dim"_a = -1,
      "The trapezoidal rule along dim with sample points x or spacing dx (torch.trapezoid).");
  m.def(
      "cumulative_trapezoid",
      [](const Tensor& y, std::optional<Tensor> x, std::optional<Scalar> dx, int64_t dim) {
        if (x && dx) throw nb::type_error("[cumulative_trapezoid] takes x or dx, not both");
        return x ? ug::cumulative_trapezoid(y, *x, dim) : ug::cumulative_trapezoid(y, dx.value_or(Scalar(1)), dim);
      },
      "y"_a, "x"_a = nb::none(), nb::kw_only(), "dx"_a = nb::none(), "dim"_a = -1,
      "The running trapezoidal rule along dim with sample points x or spacing dx (torch.cumulative_trapezoid).");
  m.def(
      "gradient",
      [](const Tensor& t, nb::handle spacing, nb::handle dim, int64_t edge_order) {
        const ug::Dims dims = dim.is_none() ? ug::Dims{} : dims_of(dim, "gradient");
        std::vector<Tensor> parts;
        if (nb::isinstance<nb::sequence>(spacing) && nb::len(spacing) && nb::isinstance<Tensor>(spacing[0]))
          parts = ug::gradient(t, nb::cast<std::vector<Tensor>>(spacing), dims, edge_order);
        else if (nb::isinstance<nb::sequence>(spacing))
          parts = ug::gradient(t, nb::cast<std::vector<Scalar>>(spacing), dims, edge_order);
        else parts = ug::gradient(t, std::vector<Scalar>{nb::cast<Scalar>(spacing)}, dims, edge_order);
        return nb::tuple(nb::cast(parts));
      },
      "input"_a, nb::kw_only(), "spacing"_a = 1, "dim"_a = nb::none(), "edge_order"_a = 1,
      "The derivative along each dim by central differences, one-sided ones of order edge_order at the ends, with "
      "a scalar spacing, one per dim, or 1-d coordinates per dim; a tuple with one tensor per dim (torch.gradient).");
  m.def(
      "trapz",
      [](const Tensor& y, std::optional<Tensor> x, Scalar dx, int64_t dim) {
        return x ? ug::trapezoid(y, *x, dim) : ug::trapezoid(y, dx, dim);
      },
      "y"_a, "x"_a = nb::none(), nb::kw_only(), "dx"_a = 1, "dim"_a = -1, "torch.trapz: trapezoid's older name.");
  m.def(
      "cartesian_prod", [](nb::args tensors) { return ug::cartesian_prod(tensors_of(tensors)); }, "tensors"_a,
      "Every combination of the 1-d tensors' elements, one per row (torch.cartesian_prod).");
  m.def("combinations", &ug::combinations, "input"_a, "r"_a = 2, "with_replacement"_a = false,
        "The r-element combinations of a 1-d tensor's elements (torch.combinations).");
  m.def(
      "tril_indices",
      [](int64_t row, int64_t col, int64_t offset, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
        return ug::tril_indices(row, col, offset, options(dtype, device));
      },
      "row"_a, "col"_a, "offset"_a = 0, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "The [2, N] indices of a row x col matrix's lower triangle (torch.tril_indices).");
  m.def(
      "triu_indices",
      [](int64_t row, int64_t col, int64_t offset, std::optional<ug::DType> dtype, std::optional<ug::Device> device) {
        return ug::triu_indices(row, col, offset, options(dtype, device));
      },
      "row"_a, "col"_a, "offset"_a = 0, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "The [2, N] indices of a row x col matrix's upper triangle (torch.triu_indices).");
  m.def(
      "unravel_index",
      [](const Tensor& indices, nb::handle shape) {
        return nb::tuple(nb::cast(ug::unravel_index(indices, dims_of(shape, "unravel_index"))));
      },
      "indices"_a, "shape"_a, "The coordinates of flat indices in a shape, one tensor per dim (torch.unravel_index).");
  m.def(
      "column_stack", [](const std::vector<Tensor>& tensors) { return ug::column_stack(tensors); }, "tensors"_a,
      "0-d and 1-d tensors as columns, stacked side by side (torch.column_stack).");
  m.def(
      "broadcast_tensors",
      [](nb::args tensors) { return nb::tuple(nb::cast(ug::broadcast_tensors(tensors_of(tensors)))); }, "tensors"_a,
      "The tensors expanded to their broadcast shape (torch.broadcast_tensors).");
  m.def(
      "broadcast_shapes",
      [](nb::args shapes) {
        std::vector<ug::Dims> all;
        for (nb::handle s : shapes) all.push_back(dims_of(s, "broadcast_shapes"));
        const ug::Dims shape = ug::broadcast_shapes(all);
        return nb::tuple(nb::cast(std::vector<int64_t>(shape.begin(), shape.end())));
      },
      "shapes"_a, "The shape the given shapes broadcast to (torch.broadcast_shapes).");
  m.def(
      "logspace",
      [](double start, double end, int64_t steps, double base, std::optional<ug::DType> dtype,
         std::optional<ug::Device> device, bool requires_grad) {
        return with_grad(ug::logspace(start, end, steps, base, options(dtype, device)), requires_grad);
      },
      "start"_a, "end"_a, "steps"_a, "base"_a = 10.0, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "base ** linspace(start, end, steps) (torch.logspace).");
  m.def(
      "randint_like",
      [](const Tensor& input, int64_t low_or_high, std::optional<int64_t> high, std::optional<ug::DType> dtype) {
        return high ? ug::randint_like(input, low_or_high, *high, {.dtype = dtype})
                    : ug::randint_like(input, 0, low_or_high, {.dtype = dtype});
      },
      "input"_a, "low"_a, "high"_a = nb::none(), nb::kw_only(), "dtype"_a = nb::none(),
      "Uniform integers in [low, high) of input's shape (torch.randint_like(input, high) or (input, low, high)).");
}

}  // namespace ugpy
