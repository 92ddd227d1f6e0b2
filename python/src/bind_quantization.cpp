// Dynamic quantization: ug.quantize_per_tensor / quantize_per_channel / dequantize on plain
// integer tensors, and _C.quantization (ug.ao.quantization, ug.ao.nn.quantized.dynamic).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/set.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/backend/cpu/cpu_backend.h"
#include "ug/ops/quantized.h"
#include "ug/quantization/dynamic_linear.h"

namespace ugpy {

using namespace nb::literals;

void bind_quantization(nb::module_& m) {
  using ug::Tensor;
  m.def("quantize_per_tensor", &ug::quantize_per_tensor, "input"_a, "scale"_a, "zero_point"_a, "dtype"_a,
        "torch.quantize_per_tensor(...).int_repr(): the integers (uint8 or int8) of x / scale + zero_point, "
        "rounded half to even and clamped; unigrad has no quantized tensor type, so the caller keeps scale and "
        "zero_point.");
  m.def("quantize_per_channel", &ug::quantize_per_channel, "input"_a, "scales"_a, "zero_points"_a, "axis"_a, "dtype"_a,
        "torch.quantize_per_channel(...).int_repr(): one scale and zero point per index of axis.");
  m.def(
      "dequantize",
      [](const Tensor& q, nb::handle scale, nb::handle zero_point, std::optional<int64_t> axis) {
        if (axis) return ug::dequantize(q, nb::cast<Tensor>(scale), nb::cast<Tensor>(zero_point), *axis);
        return ug::dequantize(q, nb::cast<double>(scale), nb::cast<int64_t>(zero_point));
      },
      "input"_a, "scale"_a, "zero_point"_a, "axis"_a = nb::none(),
      "(input - zero_point) * scale in float32: torch.dequantize of the quantized tensor these integers, scale "
      "and zero point stand for (per channel along axis: tensors of scales and zero points).");

  nb::module_ q = m.def_submodule("quantization", "dynamic quantization (torch.ao.quantization)");
  q.def("quantize_dynamic", &ug::quantization::quantize_dynamic, "model"_a, "qconfig_spec"_a, "dtype"_a, "inplace"_a,
        "per_channel"_a);
  q.def("_matmul_u8s8", &ug::matmul_u8s8, "a"_a, "b"_a, "a_zero_point"_a = 0,
        "The int32 product (a - a_zero_point) (uint8) @ b.T (int8), exact.");
  q.def(
      "_int8_kernel", [] { return std::string(ug::cpu::cpu_backend().int8_kernel()); },
      "\"avx512vnni\" or \"portable\": what runs the int8 products.");
  q.def(
      "quantized_linear_dynamic",
      [](const ug::Tensor& x, const ug::Tensor& w, const ug::Tensor& scale, const ug::Tensor& zp,
         const ug::Tensor& bias,
         bool reduce_range) { return ug::quantized_linear_dynamic(x, w, scale, zp, bias, reduce_range); },
      "input"_a, "weight"_a, "scale"_a, "zero_point"_a, "bias"_a = nb::none(), "reduce_range"_a = true,
      "torch.ops.quantized.linear_dynamic with the weight's integers, scale and zero point apart.");

  using QLinear = ug::nn::quantized::dynamic::LinearImpl;
  nb::class_<QLinear, ug::nn::Module>(q, "DynamicQuantizedLinear",
                                      "torch.ao.nn.quantized.dynamic.Linear: an int8 weight, a float32 bias; the "
                                      "input is quantized to uint8 at each call.")
      .def(nb::init<int64_t, int64_t, bool, bool>(), "in_features"_a, "out_features"_a, "bias_"_a = true,
           "per_channel"_a = false)
      .def_static("from_float", &QLinear::from_float, "mod"_a, "per_channel"_a = false)
      .def("weight", &QLinear::weight, "The weight dequantized (float32).")
      .def("int_weight", &QLinear::int_weight, "The int8 weight (torch's weight().int_repr()).")
      .def("weight_scale", &QLinear::weight_scale)
      .def("weight_zero_point", &QLinear::weight_zero_point)
      .def("bias", [](QLinear& l) { return l.has_buffer("bias") ? nb::cast(l.buffer("bias")) : nb::none(); })
      .def_prop_ro("in_features", &QLinear::in_features)
      .def_prop_ro("out_features", &QLinear::out_features)
      .def_prop_ro("per_channel", &QLinear::per_channel);
}

}  // namespace ugpy
