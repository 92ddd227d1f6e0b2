#include "ug/serve/onnx_model.h"

#include "ug/core/error.h"
#include "ug/onnx/import.h"

namespace ug::serve {

namespace {

TensorSpec spec_of(const onnx::ValueInfo& info) {
  return {.name = info.name, .shape = info.shape, .dtype = info.dtype};
}

/** The model's one input: float32, a batch dimension first and every other dimension fixed. */
TensorSpec servable_input(const onnx::OnnxModule& module) {
  if (module.inputs().size() != 1)
    fail("[serve] the ONNX model has ", module.inputs().size(), " inputs; ug serve serves models with one");
  const TensorSpec input = spec_of(module.inputs().front());
  if (input.dtype != DType::Float32)
    fail<TypeError>("[serve] the ONNX model's input '", input.name, "' is ", input.dtype,
                    "; ug serve decodes float32 inputs");
  if (input.shape.empty())
    fail("[serve] the ONNX model's input '", input.name, "' is a scalar; ug serve needs a batch dimension");
  for (size_t d = 1; d < input.shape.size(); ++d)
    if (input.shape[d] < 0)
      fail("[serve] the ONNX model's input '", input.name, "' has a symbolic dimension ", d,
           "; ug serve needs every dimension but the batch fixed");
  return input;
}

std::vector<TensorSpec> output_specs(const onnx::OnnxModule& module) {
  std::vector<TensorSpec> outputs;
  for (const onnx::ValueInfo& out : module.outputs()) outputs.push_back(spec_of(out));
  return outputs;
}

class OnnxModel final : public ModuleModel {
 public:
  explicit OnnxModel(const std::shared_ptr<onnx::OnnxModule>& module)
      : ModuleModel(module, servable_input(*module), output_specs(*module)) {}

  std::string format() const override { return "onnx"; }
  std::string architecture() const override { return "onnx"; }
  std::map<std::string, std::variant<int64_t, std::string>> settings() const override { return {}; }
};

}  // namespace

std::unique_ptr<ServedModel> open_onnx_model(const std::string& path) {
  return std::make_unique<OnnxModel>(onnx::load(path));
}

}  // namespace ug::serve
