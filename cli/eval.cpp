// `ug eval MODEL`: the loss and accuracy of a saved model on the test split.
#include <cstdio>

#include "cli.h"
#include "data.h"
#include "ug/data/data_loader.h"
#include "ug/data/datasets.h"
#include "ug/models/zoo.h"
#include "ug/train/trainer.h"

namespace ug::cli {

int run_eval(const Args& args) {
  std::string path;
  DataFlags data;
  int64_t batch_size = 1000;
  for (size_t i = 0; i < args.size(); ++i) {
    if (parse_data_flag(args, i, data)) continue;
    const std::string_view name = option_name(args[i]);
    if (name == "--batch-size") batch_size = parse_int(name, option_value(args, i), 1, 1 << 20);
    else if (args[i].starts_with("-")) throw UsageError("unknown option '" + std::string(args[i]) + "'");
    else if (!path.empty())
      throw UsageError("expected one model file, got '" + path + "' and '" + std::string(args[i]) + "'");
    else path = args[i];
  }
  if (path.empty()) throw UsageError("expected a model file (model.safetensors from `ug train`)");
  models::LoadedModel loaded = models::load_model(path);
  Split test = load_split(data, false);
  train::Trainer trainer(loaded.model);
  trainer.compile({.loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  data::DataLoader loader(std::make_shared<data::TensorDataset>(std::vector<Tensor>{test.images, test.labels}),
                          {.batch_size = batch_size});
  train::Logs logs = trainer.evaluate(loader, 0);
  std::printf("%s on %lld test images: accuracy %.4f, loss %.4f\n", path.c_str(),
              static_cast<long long>(test.labels.numel()), logs.at("accuracy"), logs.at("loss"));
  return 0;
}

}  // namespace ug::cli
