// The main job in C++: the articles' MLP (784-128-10, Adam 1e-3, batch 64) trained on
// Fashion-MNIST with the Keras-style Trainer, then saved, charted and asked for a few
// predictions. The same program as examples/train_fashion_mnist.py.
//
//   build/examples/train_fashion_mnist [epochs] [limit] [out]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ug/ug.h"

namespace {

const char* const kClasses[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/** Images as float32 (N, 784) in [0, 1] and int64 labels, from Debian's IDX files. */
std::pair<ug::Tensor, ug::Tensor> load(const std::string& split, int64_t limit) {
  const char* env = std::getenv("FASHION_MNIST_DIR");
  const std::string dir = env ? env : "/usr/share/datasets/fashion-mnist";
  ug::Tensor images = ug::data::read_idx(dir + "/" + split + "-images-idx3-ubyte.gz");
  ug::Tensor labels = ug::data::read_idx(dir + "/" + split + "-labels-idx1-ubyte.gz");
  const int64_t n = limit > 0 ? std::min(limit, images.size(0)) : images.size(0);
  return {images.narrow(0, 0, n).reshape({n, 784}).to(ug::float32) / 255.0, labels.narrow(0, 0, n).to(ug::int64)};
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t epochs = argc > 1 ? std::atoll(argv[1]) : 3;
  const int64_t limit = argc > 2 ? std::atoll(argv[2]) : 0;
  const std::string out = argc > 3 ? argv[3] : "runs/example-cpp";
  std::filesystem::create_directories(out);
  try {
    ug::manual_seed(0);
    auto [x_train, y_train] = load("train", limit);
    auto [x_test, y_test] = load("t10k", 0);
    ug::data::DataLoader train(std::make_shared<ug::data::TensorDataset>(std::vector<ug::Tensor>{x_train, y_train}),
                               {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 0});
    ug::data::DataLoader test(std::make_shared<ug::data::TensorDataset>(std::vector<ug::Tensor>{x_test, y_test}),
                              {.batch_size = 1000});

    ug::models::Architecture arch{"mlp", {}};  // Sequential(Flatten, Linear(784, 128), ReLU, Linear(128, 10))
    auto model = ug::models::build(arch);
    ug::train::Trainer trainer(model);
    trainer.compile({.optimizer = std::make_shared<ug::optim::Adam>(model->parameters(), ug::optim::AdamOptions(1e-3)),
                     .loss = "sparse_categorical_crossentropy",
                     .metrics = {"accuracy"}});
    auto history = trainer.fit(
        train, {.epochs = epochs,
                .validation_data = &test,
                .callbacks = {std::make_shared<ug::train::CSVLogger>(out + "/metrics.csv"),
                              std::make_shared<ug::train::TensorBoard>(out + "/logs"),
                              std::make_shared<ug::train::ModelCheckpoint>(
                                  out + "/checkpoint.safetensors",
                                  ug::train::ModelCheckpointOptions{.save_weights_only = false})}});
    ug::train::Logs result = trainer.evaluate(test, 0);
    std::printf("test accuracy %.4f, test loss %.4f\n", result.at("accuracy"), result.at("loss"));

    ug::models::save_model(*model, arch, out + "/model.safetensors");
    ug::logging::plot_history({history->history.begin(), history->history.end()}, out + "/history.svg",
                              "mlp on fashion-mnist");
    ug::Tensor probabilities = trainer.predict(x_test.narrow(0, 0, 5)).softmax(1);
    for (int64_t i = 0; i < 5; ++i) {
      auto [p, label] = ug::max(probabilities[i], 0);
      std::printf("test image %lld: %-12s p=%.3f  true: %s\n", static_cast<long long>(i),
                  kClasses[label.item<int64_t>()], p.item<double>(), kClasses[y_test[i].item<int64_t>()]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 1;
  }
  return 0;
}
