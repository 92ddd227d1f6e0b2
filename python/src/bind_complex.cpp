// Complex tensors: torch's functions and Tensor members for their parts (ug.real, x.imag,
// view_as_real, conj, complex, polar, angle).
#include "bindings.h"
#include "ug/ops/complex.h"

namespace ugpy {

using namespace nb::literals;

void bind_complex(nb::module_& m, nb::class_<ug::Tensor>& tensor) {
  using ug::Tensor;
  // torch keeps conjugation and negation as lazy bits; unigrad's conj() is a new tensor, so
  // these are always resolved.
  auto self = [](const Tensor& x) { return x; };
  auto is_false = [](const Tensor&) { return false; };
  m.def("view_as_real", &ug::view_as_real, "input"_a, "z's real and imaginary parts as a real view [..., 2].");
  m.def("view_as_complex", &ug::view_as_complex, "input"_a,
        "x [..., 2] (float32/float64, last dim contiguous) as a complex view.");
  m.def("real", &ug::real, "input"_a, "The real part (a view); a real tensor itself.");
  m.def("imag", &ug::imag, "input"_a, "The imaginary part (a view); complex tensors only.");
  m.def("conj", &ug::conj, "input"_a, "The complex conjugate; a real tensor itself.");
  m.def("conj_physical", &ug::conj, "input"_a, "The complex conjugate (ug.conj: always materialised).");
  m.def("resolve_conj", self, "input"_a, "input: unigrad never defers a conjugation.");
  m.def("resolve_neg", self, "input"_a, "input: unigrad never defers a negation.");
  m.def("is_conj", is_false, "input"_a);
  m.def("is_neg", is_false, "input"_a);
  m.def("complex", &ug::complex, "real"_a, "imag"_a,
        "real + i imag, broadcast; float32 or float64 parts of one dtype.");
  m.def("polar", &ug::polar, "abs"_a, "angle"_a, "abs * (cos(angle) + i sin(angle)).");
  m.def("angle", &ug::angle, "input"_a, "The argument of each element, in radians.");
  tensor.def_prop_rw(
      "real", [](const Tensor& z) { return ug::real(z); },
      [](const Tensor& z, const Tensor& value) { ug::real(z).copy_(value); });
  tensor.def_prop_rw(
      "imag", [](const Tensor& z) { return ug::imag(z); },
      [](const Tensor& z, const Tensor& value) { ug::imag(z).copy_(value); });
  tensor.def("conj", &ug::conj)
      .def("conj_physical", &ug::conj)
      .def("is_conj", is_false)
      .def("is_neg", is_false)
      .def("angle", &ug::angle);
}

}  // namespace ugpy
