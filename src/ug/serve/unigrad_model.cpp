#include "ug/serve/unigrad_model.h"

#include "ug/models/zoo.h"

namespace ug::serve {

namespace {

class UnigradModel final : public ModuleModel {
 public:
  explicit UnigradModel(models::LoadedModel loaded)
      : ModuleModel(loaded.model, input_spec(loaded.arch), {{.name = "output"}}), arch_(std::move(loaded.arch)) {}

  std::string format() const override { return "unigrad"; }
  std::string architecture() const override { return arch_.name; }
  std::map<std::string, std::variant<int64_t, std::string>> settings() const override {
    return {arch_.config.begin(), arch_.config.end()};
  }

 private:
  static TensorSpec input_spec(const models::Architecture& arch) {
    const Shape shape = models::input_shape(arch);
    return {.name = "input", .shape = {shape.begin(), shape.end()}, .dtype = DType::Float32};
  }

  models::Architecture arch_;
};

}  // namespace

std::unique_ptr<ServedModel> open_unigrad_model(const std::string& path) {
  return std::make_unique<UnigradModel>(models::load_model(path));
}

}  // namespace ug::serve
