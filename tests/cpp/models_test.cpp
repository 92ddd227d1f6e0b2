// ug::models: the built-in architectures, their sizes, and save_model/load_model round trips.
#include <unistd.h>

#include <filesystem>

#include "test_util.h"

namespace ug {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".safetensors")).string();
}

TEST(Models, ParameterCountsMatchTheArticlesAndTorch) {
  manual_seed(0);
  models::Architecture mlp{"mlp", {}}, lenet{"lenet", {}}, wide{"mlp", {{"hidden", 256}}};
  EXPECT_EQ(models::build(mlp)->num_parameters(), 101770);   // 784*128+128 + 128*10+10
  EXPECT_EQ(models::build(lenet)->num_parameters(), 61706);  // torch's LeNet in shared/bench/peers/models.py
  EXPECT_EQ(models::build(wide)->num_parameters(), 784 * 256 + 256 + 256 * 10 + 10);
  EXPECT_EQ(wide.config.at("in_features"), 784);  // defaults filled in
}

TEST(Models, EveryModelClassifiesImageBatches) {
  manual_seed(0);
  Tensor images = rand({3, 1, 28, 28});
  for (const std::string& name : models::names()) {
    models::Architecture arch{name, {}};
    Tensor logits = (*models::build(arch))(images);
    EXPECT_EQ(logits.shape(), test::shape({3, 10})) << name;
    logits.sum().backward();
  }
}

TEST(Models, SaveAndLoadGiveTheSameOutputs) {
  manual_seed(1);
  Tensor images = rand({2, 1, 28, 28});
  for (const std::string& name : models::names()) {
    models::Architecture arch{name, {{"classes", 7}}};
    auto model = models::build(arch);
    model->eval();
    const std::string path = temp_path("ug_models_" + name);
    models::save_model(*model, arch, path);
    models::LoadedModel back = models::load_model(path);
    EXPECT_EQ(back.arch.name, name);
    EXPECT_EQ(back.arch.config, arch.config);
    EXPECT_FALSE(back.model->is_training());
    EXPECT_EQ(test::values((*back.model)(images)), test::values((*model)(images))) << name;
    std::filesystem::remove(path);
  }
}

TEST(Models, BadNamesSettingsAndFilesAreClearErrors) {
  models::Architecture unknown{"resnet", {}}, bad_key{"mlp", {{"depth", 3}}}, bad_value{"mlp", {{"hidden", 0}}};
  EXPECT_THROW(models::build(unknown), ValueError);
  EXPECT_THROW(models::build(bad_key), ValueError);
  EXPECT_THROW(models::build(bad_value), ValueError);
  const std::string path = temp_path("ug_models_plain");
  io::TensorDict weights;
  weights.insert("w", zeros({2}));
  io::save_file(weights, path);
  try {
    models::load_model(path);
    FAIL() << "loaded weights without an architecture";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("without an architecture"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ug
