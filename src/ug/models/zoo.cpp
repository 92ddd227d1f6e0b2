#include "ug/models/zoo.h"

#include <nlohmann/json.hpp>

#include "ug/core/error.h"
#include "ug/io/safetensors.h"
#include "ug/models/classifiers.h"
#include "ug/nn/containers.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/layers/linear.h"

namespace ug::models {

namespace {

constexpr const char* kArchitectureKey = "ug.architecture";
constexpr const char* kConfigKey = "ug.config";

using Config = std::map<std::string, int64_t>;

const std::map<std::string, Config>& defaults() {
  static const std::map<std::string, Config> table = {
      {"mlp", {{"in_features", 784}, {"hidden", 128}, {"classes", 10}}},
      {"lenet", {{"in_channels", 1}, {"classes", 10}}},
      {"transformer",
       {{"tokens", 28}, {"features", 28}, {"d_model", 64}, {"heads", 4}, {"ff", 128}, {"layers", 2}, {"classes", 10}}},
  };
  return table;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::shared_ptr<nn::Module> make(const std::string& name, const Config& c) {
  if (name == "mlp")
    return nn::Sequential(nn::Flatten(), nn::Linear(c.at("in_features"), c.at("hidden")), nn::ReLU(),
                          nn::Linear(c.at("hidden"), c.at("classes")))
        .ptr();
  if (name == "lenet") return std::make_shared<LeNet>(c.at("in_channels"), c.at("classes"));
  return std::make_shared<TransformerClassifier>(TransformerClassifier::Options{.tokens = c.at("tokens"),
                                                                                .features = c.at("features"),
                                                                                .d_model = c.at("d_model"),
                                                                                .heads = c.at("heads"),
                                                                                .ff = c.at("ff"),
                                                                                .layers = c.at("layers"),
                                                                                .classes = c.at("classes")});
}

/** The architecture's settings over its defaults, checked. */
Config full_config(const Architecture& arch) {
  Config full = default_config(arch.name);
  for (const auto& [key, value] : arch.config) {
    if (!full.count(key)) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : full) keys.push_back(k);
      fail("[models] ", arch.name, " has no setting '", key, "'; its settings are ", joined(keys));
    }
    if (value <= 0) fail("[models] ", arch.name, " setting ", key, " must be positive, got ", value);
    full[key] = value;
  }
  return full;
}

}  // namespace

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& [name, config] : defaults()) out.push_back(name);
  return out;
}

Config default_config(const std::string& name) {
  auto it = defaults().find(name);
  if (it == defaults().end()) fail("[models] unknown model '", name, "'; the models are ", joined(names()));
  return it->second;
}

std::shared_ptr<nn::Module> build(Architecture& arch) {
  arch.config = full_config(arch);
  return make(arch.name, arch.config);
}

Shape input_shape(const Architecture& arch) {
  const Config c = full_config(arch);
  if (arch.name == "mlp") return Shape{1, c.at("in_features")};
  if (arch.name == "lenet") return Shape{1, c.at("in_channels"), 28, 28};
  return Shape{1, c.at("tokens"), c.at("features")};
}

void save_model(const nn::Module& model, const Architecture& arch, const std::string& path) {
  io::Metadata metadata = {{kArchitectureKey, arch.name}, {kConfigKey, nlohmann::json(arch.config).dump()}};
  io::save_file(model.state_dict(), path, metadata);
}

LoadedModel load_model(const std::string& path) {
  io::Metadata metadata = io::load_metadata(path);
  auto name = metadata.find(kArchitectureKey);
  auto config = metadata.find(kConfigKey);
  if (name == metadata.end() || config == metadata.end())
    fail("[models] ", path, " holds weights without an architecture (no '", kArchitectureKey,
         "' in its metadata): save it with ug::models::save_model or `ug train`");
  LoadedModel out{.model = nullptr, .arch = {.name = name->second, .config = {}}};
  nlohmann::json json = nlohmann::json::parse(config->second, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) fail("[models] ", path, ": the '", kConfigKey, "' metadata is not a JSON object");
  for (const auto& [key, value] : json.items()) {
    if (!value.is_number_integer()) fail("[models] ", path, ": setting '", key, "' is not an integer");
    out.arch.config[key] = value.get<int64_t>();
  }
  out.model = build(out.arch);
  out.model->load_state_dict(io::load_file(path));
  out.model->eval();
  return out;
}

}  // namespace ug::models
