// ug.onnx.load: an ONNX model as a trainable ug.nn.Module (ug::onnx::OnnxModule).
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/onnx/import.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Tensor;
using ug::onnx::OnnxModule;
using ug::onnx::ValueInfo;

nb::object outputs_to_python(std::vector<Tensor> outputs) {
  if (outputs.size() == 1) return nb::cast(outputs.front());
  nb::list items;
  for (Tensor& t : outputs) items.append(nb::cast(std::move(t)));
  return nb::tuple(items);
}

nb::object run(OnnxModule& m, nb::args args) {
  std::vector<Tensor> inputs;
  for (nb::handle a : args) inputs.push_back(nb::cast<Tensor>(a));
  nb::gil_scoped_release release;
  std::vector<Tensor> outputs = m.forward(inputs);
  nb::gil_scoped_acquire acquire;
  return outputs_to_python(std::move(outputs));
}

}  // namespace

void bind_onnx_import(nb::module_& onnx) {
  nb::class_<ValueInfo>(onnx, "ValueInfo", "A graph input or output: name, shape (-1 where symbolic) and dtype.")
      .def_ro("name", &ValueInfo::name)
      .def_prop_ro("shape", [](const ValueInfo& v) { return nb::tuple(nb::cast(v.shape)); })
      .def_ro("dtype", &ValueInfo::dtype)
      .def("__repr__", [](const ValueInfo& v) {
        std::string s = "ValueInfo(name='" + v.name + "', shape=(";
        for (size_t i = 0; i < v.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(v.shape[i]);
        return s + (v.shape.size() == 1 ? ",)" : ")") + ", dtype=" + std::string(ug::dtype_name(v.dtype)) + ")";
      });

  nb::class_<OnnxModule, ug::nn::Module>(
      onnx, "OnnxModule",
      "An imported ONNX graph run with ug ops: floating initializers are its parameters (under their ONNX "
      "names), so it trains like any Module.")
      .def_prop_ro("inputs", &OnnxModule::inputs, "The graph inputs (not initializers), in call order.")
      .def_prop_ro("outputs", &OnnxModule::outputs)
      .def_prop_ro("opset", &OnnxModule::opset)
      .def("forward", &run, "One tensor per input; one tensor back, or a tuple for several outputs.")
      .def("__call__", [](nb::handle self, nb::args args) -> nb::object {
        OnnxModule& m = nb::cast<OnnxModule&>(self);
        // One in, one out: the Module call path, which runs the forward hooks.
        if (args.size() == 1 && m.inputs().size() == 1 && m.outputs().size() == 1)
          return nb::cast(m(nb::cast<Tensor>(args[0])));
        return run(m, args);
      });

  const ug::onnx::LoadLimits defaults;
  onnx.def(
      "load",
      [](const std::filesystem::path& path, int64_t max_elements, int64_t max_live_elements) {
        return ug::onnx::load(path.string(), {max_elements, max_live_elements});
      },
      "path"_a, nb::kw_only(), "max_elements"_a = defaults.max_elements,
      "max_live_elements"_a = defaults.max_live_elements,
      "Reads an ONNX model (external data next to it) as a trainable OnnxModule. A forward pass "
      "refuses tensors over max_elements elements, and intermediate values over max_live_elements "
      "alive at once.");
  onnx.def(
      "load_bytes",
      [](nb::bytes data, const std::string& base_dir, int64_t max_elements, int64_t max_live_elements) {
        return ug::onnx::load_bytes(std::string_view(data.c_str(), data.size()), base_dir,
                                    {max_elements, max_live_elements});
      },
      "data"_a, "base_dir"_a = "", nb::kw_only(), "max_elements"_a = defaults.max_elements,
      "max_live_elements"_a = defaults.max_live_elements,
      "Reads a serialized ONNX model; external data only when base_dir names its folder.");
}

}  // namespace ugpy
