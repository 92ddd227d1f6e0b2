// `ug predict MODEL`: the class a saved model gives to test images (by index) or to the images
// in a file, with its probability and, for test images, the true class.
#include <algorithm>
#include <cstdio>

#include "cli.h"
#include "data.h"
#include "ug/graph/grad_mode.h"
#include "ug/models/zoo.h"
#include "ug/ops/indexing.h"
#include "ug/ops/reduce.h"

namespace ug::cli {

int run_predict(const Args& args) {
  std::string path, file;
  DataFlags data;
  std::vector<int64_t> indices;
  for (size_t i = 0; i < args.size(); ++i) {
    if (parse_data_flag(args, i, data)) continue;
    const std::string_view name = option_name(args[i]);
    if (name == "--index") {
      indices.push_back(parse_int(name, option_value(args, i), 0, INT64_MAX));
      while (i + 1 < args.size() && !args[i + 1].starts_with("-"))
        indices.push_back(parse_int(name, args[++i], 0, INT64_MAX));
    } else if (name == "--file") {
      file = option_value(args, i);
    } else if (args[i].starts_with("-")) {
      throw UsageError("unknown option '" + std::string(args[i]) + "'");
    } else if (!path.empty()) {
      throw UsageError("expected one model file, got '" + path + "' and '" + std::string(args[i]) + "'");
    } else {
      path = args[i];
    }
  }
  if (path.empty()) throw UsageError("expected a model file (model.safetensors from `ug train`)");
  if (!file.empty() && !indices.empty()) throw UsageError("give --index or --file, not both");
  models::LoadedModel loaded = models::load_model(path);

  Tensor images, labels;
  if (!file.empty()) {
    images = load_images(file);
  } else {
    Split test = load_split(data, false);
    if (indices.empty()) indices = {0, 1, 2, 3, 4};
    for (int64_t i : indices)
      if (i >= test.labels.numel())
        fail<IndexError>("[predict] index ", i, " is out of range for ", test.labels.numel(), " test images");
    Tensor index = empty({static_cast<int64_t>(indices.size())}, {.dtype = DType::Int64, .device = {}});
    std::copy(indices.begin(), indices.end(), index.data_ptr<int64_t>());
    images = index_select(test.images, 0, index);
    labels = index_select(test.labels, 0, index);
  }
  NoGradGuard no_grad;
  Tensor probabilities = (*loaded.model)(images).softmax(1);
  auto [best, classes] = max(probabilities, 1);
  for (int64_t n = 0; n < images.size(0); ++n) {
    const int64_t predicted = classes[n].item<int64_t>();
    std::printf("%s %lld: %-12s p=%.3f", file.empty() ? "test image" : "image",
                static_cast<long long>(file.empty() ? indices[n] : n), class_name(predicted, data).c_str(),
                best[n].item<double>());
    if (labels.defined()) {
      const int64_t truth = labels[n].item<int64_t>();
      std::printf("  true: %-12s %s", class_name(truth, data).c_str(), truth == predicted ? "ok" : "wrong");
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace ug::cli
