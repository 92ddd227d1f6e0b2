// ug.onnx.export: torch.onnx.export's signature over ug::onnx::export_function. The model is
// called from Python inside the trace, so Python subclasses with any forward signature work.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/compiler/program.h"
#include "ug/onnx/export.h"
#include "ug/graph/op_def.h"

namespace ugpy {

namespace {

namespace onnx = ug::onnx;
using ug::Tensor;

std::vector<Tensor> as_tensors(nb::handle value, const char* what) {
  if (nb::isinstance<Tensor>(value)) return {nb::cast<Tensor>(value)};
  if (nb::isinstance<nb::tuple>(value) || nb::isinstance<nb::list>(value)) {
    std::vector<Tensor> out;
    for (nb::handle item : value) {
      if (!nb::isinstance<Tensor>(item))
        throw nb::type_error((std::string("ug.onnx.export: ") + what + " must be tensors, got " +
                              nb::cast<std::string>(nb::str(item.type())))
                                 .c_str());
      out.push_back(nb::cast<Tensor>(item));
    }
    return out;
  }
  throw nb::type_error((std::string("ug.onnx.export: ") + what + " must be a tensor or a tuple of tensors, got " +
                        nb::cast<std::string>(nb::str(value.type())))
                           .c_str());
}

/** torch's dynamic_axes: {name: {axis: symbol}} or {name: [axes]} (symbols made up). */
std::map<std::string, std::map<int64_t, std::string>> dynamic_axes_of(nb::handle spec) {
  std::map<std::string, std::map<int64_t, std::string>> out;
  if (spec.is_none()) return out;
  for (auto [key, value] : nb::cast<nb::dict>(spec)) {
    auto& axes = out[nb::cast<std::string>(key)];
    if (nb::isinstance<nb::dict>(value)) {
      for (auto [axis, symbol] : nb::cast<nb::dict>(value))
        axes[nb::cast<int64_t>(axis)] = nb::cast<std::string>(symbol);
    } else {
      for (nb::handle axis : value) axes[nb::cast<int64_t>(axis)] = "";
    }
  }
  return out;
}

void export_model(nb::object model, nb::object args, nb::object f, std::optional<std::vector<std::string>> input_names,
                  std::optional<std::vector<std::string>> output_names, nb::object dynamic_axes, int opset_version) {
  const bool is_module = nb::isinstance<ug::nn::Module>(model);
  if (!is_module && !PyCallable_Check(model.ptr()))
    throw nb::type_error(("ug.onnx.export: model must be a ug.nn.Module or a function of tensors, got " +
                          nb::cast<std::string>(nb::str(model.type())))
                             .c_str());
  const std::vector<Tensor> inputs = as_tensors(args, "args");
  const std::string path = nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(f));
  onnx::ExportOptions options{.input_names = input_names.value_or(std::vector<std::string>{}),
                              .output_names = output_names.value_or(std::vector<std::string>{}),
                              .dynamic_axes = dynamic_axes_of(dynamic_axes),
                              .opset_version = opset_version};
  // A module's parameters and buffers keep their state_dict names; a function's constants are
  // named by the exporter.
  std::vector<std::pair<std::string, Tensor>> named;
  std::optional<onnx::EvalModeGuard> eval_mode;
  if (is_module) {
    ug::nn::Module& module = nb::cast<ug::nn::Module&>(model);
    named = module.named_parameters();
    for (auto& b : module.named_buffers()) named.push_back(std::move(b));
    eval_mode.emplace(module);
  }
  // The inputs' values are the example's: Python control flow on them must not pick the
  // example's branch for every input the file will see.
  ug::compiler::TracedValuesScope traced(inputs, "onnx.export");
  onnx::export_function(
      [&model](const std::vector<Tensor>& xs) {
        nb::list call_args;
        for (const Tensor& x : xs) call_args.append(nb::cast(x));
        return as_tensors(model(*nb::tuple(call_args)), "the model's outputs");
      },
      inputs, named, path, options);
}

}  // namespace

void bind_onnx_export(nb::module_& m) {
  m.def("export", &export_model, nb::arg("model"), nb::arg("args"), nb::arg("f"), nb::arg("input_names") = nb::none(),
        nb::arg("output_names") = nb::none(), nb::arg("dynamic_axes") = nb::none(), nb::arg("opset_version") = 17,
        "Exports model, traced on args (a tensor or a tuple of tensors), to the ONNX file f, like "
        "torch.onnx.export: the model runs once in eval mode without grad; parameters and buffers become "
        "initializers under their state_dict names. dynamic_axes={'x': {0: 'batch'}} makes those dims symbolic. "
        "model may also be a function of tensors.");
  m.def("exportable_ops", &onnx::exportable_ops, "The traced op names the exporter maps to ONNX.");
  m.def("unsupported_ops", &onnx::unsupported_ops, "The traced op names the exporter rejects.");
  m.def("traceable_ops", &ug::graph::registered_ops, "Every op name the library records while tracing.");
}

}  // namespace ugpy
