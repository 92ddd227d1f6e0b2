// Elementwise ops as Tensor methods, Python operators and ug.<name> functions, generated
// from the op tables (src/ug/ops/unary_kinds.h, binary_kinds.h): a new op needs nothing here.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <type_traits>

#include "bindings.h"
#include "convert.h"

namespace ugpy {

namespace {

using ug::Scalar;
using ug::Tensor;

/** A NumPy array as the other operand of a Python operator: a tensor of its dtype on a's
 *  device (t + np.ones(2) is a float64 tensor, as in torch); nullopt for any other type. */
std::optional<Tensor> array_operand(const Tensor& a, nb::handle b) {
  if (!nb::hasattr(b, "__array_interface__")) return std::nullopt;
  return tensor_from_data(b, std::nullopt, a.device());
}

/** Binds Python operator `name` as fn(self, other) for a tensor, a Python number (where fn
 *  takes one) or a NumPy array `other`. is_operator: any other type gets NotImplemented, not a
 *  TypeError, so that Python asks the operand's reflected method next (a user class's __radd__)
 *  and otherwise raises its own TypeError ("unsupported operand type(s) for +"), as torch.
 *  An in-place operator's fn returns `a` itself, which the reference policies hand back as the
 *  same Python object (t += 1 keeps t, as torch); the others' new tensors are moved out. */
template <class Fn> void def_operator(nb::class_<Tensor>& cls, const char* name, Fn fn) {
  constexpr auto policy = nb::rv_policy::reference_internal;
  cls.def(
      name, [fn](Tensor& a, const Tensor& b) -> decltype(auto) { return fn(a, b); }, policy, nb::is_operator());
  if constexpr (std::is_invocable_v<Fn, Tensor&, Scalar>)
    cls.def(
        name, [fn](Tensor& a, Scalar b) -> decltype(auto) { return fn(a, b); }, policy, nb::is_operator());
  cls.def(
      name,
      [fn](Tensor& a, nb::handle b) -> nb::object {
        std::optional<Tensor> t = array_operand(a, b);
        return t ? nb::cast(fn(a, *t), nb::rv_policy::reference) : nb::not_implemented();
      },
      nb::is_operator());
}

}  // namespace

void bind_elementwise_methods(nb::class_<Tensor>& cls) {
  // The unary ops come from their table (src/ug/ops/unary_kinds.h).
#define UG_METHOD(Op, name)                                 \
  cls.def(#name, [](const Tensor& t) { return t.name(); }); \
  cls.def(#name "_", [](Tensor& t) { return t.name##_(); });
  UG_UNARY_MATH_OPS(UG_METHOD)
#undef UG_METHOD
#define UG_METHOD(Op, name) cls.def(#name, [](const Tensor& t) { return t.name(); });
  UG_UNARY_PREDICATES(UG_METHOD)
#undef UG_METHOD
  cls.def("gelu", &Tensor::gelu, nb::arg("approximate") = "none")
      .def("negative", [](const Tensor& t) { return t.neg(); })
      .def("isclose", &ug::isclose, nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
           nb::arg("equal_nan") = false)
      .def("allclose", &ug::allclose, nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
           nb::arg("equal_nan") = false)
      .def("equal", &ug::equal, nb::arg("other"))
      .def("absolute", [](const Tensor& t) { return t.abs(); })
      .def(
          "clamp", [](const Tensor& t, std::optional<Scalar> lo, std::optional<Scalar> hi) { return t.clamp(lo, hi); },
          nb::arg("min") = nb::none(), nb::arg("max") = nb::none())
      .def(
          "clamp", [](const Tensor& t, std::optional<Tensor> lo, std::optional<Tensor> hi) { return t.clamp(lo, hi); },
          nb::arg("min") = nb::none(), nb::arg("max") = nb::none())
      .def(
          "clip", [](const Tensor& t, std::optional<Scalar> lo, std::optional<Scalar> hi) { return t.clamp(lo, hi); },
          nb::arg("min") = nb::none(), nb::arg("max") = nb::none())
      .def(
          "clamp_", [](Tensor& t, std::optional<Scalar> lo, std::optional<Scalar> hi) { return t.clamp_(lo, hi); },
          nb::arg("min") = nb::none(), nb::arg("max") = nb::none())
      .def("lerp", [](const Tensor& t, const Tensor& end, Scalar w) { return t.lerp(end, w); })
      .def("lerp", [](const Tensor& t, const Tensor& end, const Tensor& w) { return t.lerp(end, w); })
      .def("where", [](const Tensor& t, const Tensor& cond, const Tensor& other) { return ug::where(cond, t, other); })
      .def("where", [](const Tensor& t, const Tensor& cond, Scalar other) { return ug::where(cond, t, other); });

#define UG_METHOD(Op, name)                                                    \
  cls.def(#name, [](const Tensor& a, const Tensor& b) { return a.name(b); });  \
  cls.def(#name, [](const Tensor& a, Scalar b) { return a.name(b); });         \
  cls.def(#name "_", [](Tensor& a, const Tensor& b) { return a.name##_(b); }); \
  cls.def(#name "_", [](Tensor& a, Scalar b) { return a.name##_(b); });
  UG_BINARY_PUBLIC(UG_METHOD)
#undef UG_METHOD
#define UG_ALPHA_METHOD(name)                                                                                        \
  cls.def(                                                                                                           \
      #name, [](const Tensor& a, const Tensor& b, Scalar alpha) { return ug::name(a, b, alpha); }, nb::arg("other"), \
      nb::kw_only(), nb::arg("alpha"));                                                                              \
  cls.def(                                                                                                           \
      #name "_", [](Tensor& a, const Tensor& b, Scalar alpha) -> Tensor& { return ug::name##_(a, b, alpha); },       \
      nb::arg("other"), nb::kw_only(), nb::arg("alpha"), nb::rv_policy::reference_internal);
  UG_ALPHA_METHOD(add)
  UG_ALPHA_METHOD(sub)
#undef UG_ALPHA_METHOD

  // Python operators. Reflected forms compute `other op self`.
  def_operator(cls, "__add__", [](Tensor& a, const auto& b) { return ug::add(a, b); });
  def_operator(cls, "__radd__", [](Tensor& a, const auto& b) { return ug::add(b, a); });
  def_operator(cls, "__iadd__", [](Tensor& a, const auto& b) -> Tensor& { return a.add_(b); });
#define UG_OPERATOR(py, name)                                                                \
  def_operator(cls, "__" py "__", [](Tensor& a, const auto& b) { return ug::name(a, b); });  \
  def_operator(cls, "__r" py "__", [](Tensor& a, const auto& b) { return ug::name(b, a); }); \
  def_operator(cls, "__i" py "__", [](Tensor& a, const auto& b) -> Tensor& { return a.name##_(b); });
  UG_OPERATOR("sub", sub)
  UG_OPERATOR("mul", mul)
  UG_OPERATOR("truediv", div)
  UG_OPERATOR("floordiv", floor_divide)
  UG_OPERATOR("mod", remainder)
  UG_OPERATOR("pow", pow)
  UG_OPERATOR("and", bitwise_and)
  UG_OPERATOR("or", bitwise_or)
  UG_OPERATOR("xor", bitwise_xor)
  UG_OPERATOR("lshift", bitwise_left_shift)
  UG_OPERATOR("rshift", bitwise_right_shift)
#undef UG_OPERATOR
  // t == "a" is False, t != None True (as torch).
#define UG_COMPARISON(py, name) \
  def_operator(cls, "__" py "__", [](Tensor& a, const auto& b) { return ug::name(a, b); });
  UG_COMPARISON("eq", eq)
  UG_COMPARISON("ne", ne)
  UG_COMPARISON("lt", lt)
  UG_COMPARISON("le", le)
  UG_COMPARISON("gt", gt)
  UG_COMPARISON("ge", ge)
#undef UG_COMPARISON
  def_operator(cls, "__matmul__", [](Tensor& a, const Tensor& b) { return a.matmul(b); });
  def_operator(cls, "__rmatmul__", [](Tensor& a, const Tensor& b) { return b.matmul(a); });
  // NumPy's own operators defer to the tensor's reflected ones (np.ones(2) + t is a tensor).
  cls.attr("__array_priority__") = 1000;
  cls.def("__neg__", [](const Tensor& a) { return a.neg(); })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return a.abs(); })
      .def("__invert__", [](const Tensor& a) { return a.bitwise_not(); });
}

void bind_elementwise_functions(nb::module_& m) {
#define UG_FUNCTION(Op, name) \
  m.def(                      \
      #name, [](const Tensor& x) { return ug::name(x); }, nb::arg("input"));
  UG_UNARY_MATH_OPS(UG_FUNCTION)
  UG_UNARY_PREDICATES(UG_FUNCTION)
#undef UG_FUNCTION
#define UG_FUNCTION(Op, name)                                                                                      \
  m.def(                                                                                                           \
      #name, [](const Tensor& a, const Tensor& b) { return ug::name(a, b); }, nb::arg("input"), nb::arg("other")); \
  m.def(                                                                                                           \
      #name, [](const Tensor& a, Scalar b) { return ug::name(a, b); }, nb::arg("input"), nb::arg("other"));        \
  m.def(                                                                                                           \
      #name, [](Scalar a, const Tensor& b) { return ug::name(a, b); }, nb::arg("input"), nb::arg("other"));
  UG_BINARY_PUBLIC(UG_FUNCTION)
#undef UG_FUNCTION
#define UG_ALPHA_FUNCTION(name)                                                                                      \
  m.def(                                                                                                             \
      #name, [](const Tensor& a, const Tensor& b, Scalar alpha) { return ug::name(a, b, alpha); }, nb::arg("input"), \
      nb::arg("other"), nb::kw_only(), nb::arg("alpha"));
  UG_ALPHA_FUNCTION(add)
  UG_ALPHA_FUNCTION(sub)
#undef UG_ALPHA_FUNCTION
  m.def(
      "gelu", [](const Tensor& x, const std::string& approximate) { return ug::gelu(x, approximate); },
      nb::arg("input"), nb::arg("approximate") = "none");
  m.def("where", [](const Tensor& c, const Tensor& a, const Tensor& b) { return ug::where(c, a, b); });
  // torch.where(condition) alone is nonzero(as_tuple=True).
  m.def(
      "where", [](const Tensor& c) { return nb::tuple(nb::cast(ug::where(c))); }, nb::arg("condition"));
  m.def("where", [](const Tensor& c, Scalar a, const Tensor& b) { return ug::where(c, a, b); });
  m.def("where", [](const Tensor& c, const Tensor& a, Scalar b) { return ug::where(c, a, b); });
  m.def("where",
        [](const Tensor& c, Scalar a, Scalar b) { return ug::where(c, ug::scalar_tensor(a), ug::scalar_tensor(b)); });
  m.def(
      "clamp", [](const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) { return ug::clamp(x, lo, hi); },
      nb::arg("input"), nb::arg("min") = nb::none(), nb::arg("max") = nb::none());
  m.def(
      "clamp", [](const Tensor& x, std::optional<Tensor> lo, std::optional<Tensor> hi) { return x.clamp(lo, hi); },
      nb::arg("input"), nb::arg("min") = nb::none(), nb::arg("max") = nb::none());
  m.def("isclose", &ug::isclose, nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
        nb::arg("equal_nan") = false);
  m.def("allclose", &ug::allclose, nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
        nb::arg("equal_nan") = false);
  m.def("equal", &ug::equal, nb::arg("input"), nb::arg("other"));
  m.def("lerp", [](const Tensor& a, const Tensor& b, Scalar w) { return ug::lerp(a, b, w); });
  m.def("lerp", [](const Tensor& a, const Tensor& b, const Tensor& w) { return ug::lerp(a, b, w); });
}

}  // namespace ugpy
