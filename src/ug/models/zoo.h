// The built-in models of `ug train` and the examples: the articles' MLP, LeNet, and a small
// transformer classifier that reads a 28x28 image as 28 tokens of 28 pixels. A saved model is
// one safetensors file: the weights plus the architecture's name and configuration in the
// metadata, so `ug eval`, `ug predict`, `ug summary` and `ug serve` rebuild it without code.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ug/nn/module.h"

namespace ug::models {

/** An architecture by name, with integer hyperparameters; missing ones take their defaults. */
struct Architecture {
  std::string name;
  std::map<std::string, int64_t> config;
};

/** The names build() accepts: "mlp", "lenet", "transformer". */
std::vector<std::string> names();

/** The hyperparameters of `name` with their defaults, e.g. mlp: in_features 784, hidden 128,
 *  classes 10. */
std::map<std::string, int64_t> default_config(const std::string& name);

/** A freshly initialised model (from the global generator). Unknown names or keys raise
 *  ValueError listing the valid ones. The full config, defaults filled in, goes to `arch`. */
std::shared_ptr<nn::Module> build(Architecture& arch);

/** The shape of one input sample with a leading batch dim of 1: (1, 784) for the MLP,
 *  (1, C, 28, 28) for LeNet, (1, tokens, features) for the transformer. */
Shape input_shape(const Architecture& arch);

/** The weights and architecture in one safetensors file (written atomically). */
void save_model(const nn::Module& model, const Architecture& arch, const std::string& path);

struct LoadedModel {
  std::shared_ptr<nn::Module> model;
  Architecture arch;
};
/** Rebuilds a model saved by save_model, in eval mode. */
LoadedModel load_model(const std::string& path);

}  // namespace ug::models
