// `ug summary MODEL`: the architecture, settings, layers, output shapes and parameter counts of
// a model saved by `ug train` (or ug::models::save_model).
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "ug/models/zoo.h"

namespace ug::cli {

int run_summary(const Args& args) {
  std::string path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].starts_with("-")) throw UsageError("unknown option '" + std::string(args[i]) + "'");
    if (!path.empty())
      throw UsageError("expected one model file, got '" + path + "' and '" + std::string(args[i]) + "'");
    path = args[i];
  }
  if (path.empty()) throw UsageError("expected a model file (model.safetensors from `ug train`)");
  models::LoadedModel loaded = models::load_model(path);
  std::cout << "architecture: " << loaded.arch.name << " (";
  const char* separator = "";
  for (const auto& [key, value] : loaded.arch.config) {
    std::cout << separator << key << "=" << value;
    separator = ", ";
  }
  std::cout << ")\n" << loaded.model->summary(models::input_shape(loaded.arch));
  return 0;
}

}  // namespace ug::cli
