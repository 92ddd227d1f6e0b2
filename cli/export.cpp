// `ug export MODEL OUT.onnx`: a saved model (its file names its architecture) as an ONNX file
// with a dynamic batch axis, input "input" and output "logits".
#include <iostream>

#include "cli.h"
#include "ug/models/zoo.h"
#include "ug/onnx/export.h"
#include "ug/ops/random.h"

namespace ug::cli {

int run_export(const Args& args) {
  std::vector<std::string> paths;
  int64_t batch = 2;
  int opset = 17;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view name = option_name(args[i]);
    if (name == "--batch") batch = parse_int(name, option_value(args, i), 1, 1 << 20);
    else if (name == "--opset") opset = static_cast<int>(parse_int(name, option_value(args, i), 13, 20));
    else if (args[i].starts_with("-")) throw UsageError("unknown option '" + std::string(args[i]) + "'");
    else paths.emplace_back(args[i]);
  }
  if (paths.size() != 2)
    throw UsageError("expected a model file and an output file (ug export MODEL.safetensors OUT.onnx)");
  models::LoadedModel loaded = models::load_model(paths[0]);
  Shape shape = models::input_shape(loaded.arch);
  shape[0] = batch;
  Tensor example = ug::rand(Dims(shape.begin(), shape.end()));
  onnx::export_model(*loaded.model, {example}, paths[1],
                     {.input_names = {"input"},
                      .output_names = {"logits"},
                      .dynamic_axes = {{"input", {{0, "batch"}}}, {"logits", {{0, "batch"}}}},
                      .opset_version = opset});
  std::cout << "wrote " << paths[1] << ": " << loaded.arch.name << ", opset " << opset << ", input \"input\" [batch";
  for (size_t d = 1; d < shape.size(); ++d) std::cout << ", " << shape[d];
  std::cout << "], output \"logits\"\n";
  return 0;
}

}  // namespace ug::cli
