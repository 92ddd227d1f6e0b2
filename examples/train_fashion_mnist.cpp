// The main job in C++: the articles' MLP (784-128-10, Adam 1e-3, batch 64) trained on
// Fashion-MNIST with the Keras-style Trainer, then saved, charted and asked for a few
// predictions. The same program as examples/train_fashion_mnist.py.
//
//   build/examples/train_fashion_mnist [epochs] [limit] [out]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ug/ug.h"

int main(int argc, char** argv) {
  // OpenBLAS's kernels for this CPU where its own table does not know it (Python's import does
  // the same), so that this program computes what examples/train_fashion_mnist.py does, bit for bit.
  ug::rerun_with_openblas_core(argv);
  const int64_t epochs = argc > 1 ? std::atoll(argv[1]) : 3;
  const int64_t limit = argc > 2 ? std::atoll(argv[2]) : 0;
  const std::string out = argc > 3 ? argv[3] : "runs/example-cpp";
  std::filesystem::create_directories(out);
  try {
    ug::manual_seed(0);
    // Images (1, 28, 28) in [0, 1] and int64 labels, from Debian's dataset-fashion-mnist.
    std::shared_ptr<ug::data::Dataset> train_set = std::make_shared<ug::data::FashionMNIST>("", true);
    auto test_set = std::make_shared<ug::data::FashionMNIST>("", false);
    if (limit > 0) {
      std::vector<int64_t> first(static_cast<size_t>(limit));
      for (int64_t i = 0; i < limit; ++i) first[i] = i;
      train_set = std::make_shared<ug::data::Subset>(train_set, first);
    }
    ug::data::DataLoader train(train_set, {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 0});
    ug::data::DataLoader test(test_set, {.batch_size = 1000});

    ug::models::Architecture arch{"mlp", {}};  // Sequential(Flatten, Linear(784, 128), ReLU, Linear(128, 10))
    auto model = ug::models::build(arch);
    ug::train::Trainer trainer(model);
    trainer.compile({.optimizer = std::make_shared<ug::optim::Adam>(model->parameters(), ug::optim::AdamOptions(1e-3)),
                     .loss = "sparse_categorical_crossentropy",
                     .metrics = {"accuracy"}});
    auto history =
        trainer.fit(train, {.epochs = epochs,
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
    const std::vector<int64_t> first_five = {0, 1, 2, 3, 4};
    ug::data::Example images_labels = test_set->get_batch(first_five);
    ug::Tensor probabilities = trainer.predict(images_labels[0]).softmax(1);
    const auto& classes = ug::data::FashionMNIST::classes();
    for (int64_t i = 0; i < 5; ++i) {
      auto [p, label] = ug::max(probabilities[i], 0);
      std::printf("test image %lld: %-12s p=%.3f  true: %s\n", static_cast<long long>(i),
                  std::string(classes[label.item<int64_t>()]).c_str(), p.item<double>(),
                  std::string(classes[images_labels[1][i].item<int64_t>()]).c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 1;
  }
  return 0;
}
