#include "data.h"

#include <filesystem>

#include "ug/core/error.h"
#include "ug/data/csv.h"
#include "ug/data/fashion_mnist.h"
#include "ug/data/idx.h"
#include "ug/data/npy.h"
#include "ug/ops/binary.h"

namespace ug::cli {

namespace fs = std::filesystem;

namespace {

/** An IDX, NPY or CSV file's array; CSV cells are read as `csv_dtype` (a header is skipped). */
Tensor read_array(const std::string& path, DType csv_dtype) {
  if (!fs::exists(path)) fail("[data] ", path, " does not exist");
  if (path.ends_with(".npy")) return data::read_npy(path);
  if (path.ends_with(".csv")) return data::read_csv(path, {.delimiter = ',', .header = {}, .dtype = csv_dtype});
  return data::read_idx(path);
}

}  // namespace

bool parse_data_flag(const Args& args, size_t& i, DataFlags& flags) {
  const std::string_view name = option_name(args[i]);
  std::string* target = name == "--data"           ? &flags.data
                        : name == "--train-images" ? &flags.train_images
                        : name == "--train-labels" ? &flags.train_labels
                        : name == "--test-images"  ? &flags.test_images
                        : name == "--test-labels"  ? &flags.test_labels
                                                   : nullptr;
  if (!target) return false;
  *target = option_value(args, i);
  return true;
}

Split load_split(const DataFlags& flags, bool train) {
  const std::string& images_flag = train ? flags.train_images : flags.test_images;
  const std::string& labels_flag = train ? flags.train_labels : flags.test_labels;
  std::string images_path = images_flag, labels_path = labels_flag;
  if (images_path.empty() != labels_path.empty())
    throw UsageError(std::string("give both --") + (train ? "train" : "test") + "-images and --" +
                     (train ? "train" : "test") + "-labels, or neither");
  if (images_path.empty()) {  // the four IDX files of a (Fashion-)MNIST folder
    data::FashionMNIST set(flags.data == "fashion-mnist" ? "" : flags.data, train);
    return {set.data().to(DType::Float32).div(255.0).unsqueeze(1), set.targets()};
  }
  Tensor images = load_images(images_path), labels = read_array(labels_path, DType::Int64);
  if (labels.dim() == 2 && labels.size(1) == 1) labels = labels.reshape({-1});  // a one-column CSV
  if (labels.dim() != 1 || images.size(0) != labels.size(0))
    fail("[data] ", images_path, " and ", labels_path, " must hold N images and N labels; got ", images.size(0),
         " images and labels of shape ", labels.shape());
  if (is_floating(labels.dtype()))
    fail("[data] ", labels_path, " holds ", labels.dtype(), " labels; expected integers");
  return {images, labels.to(DType::Int64)};
}

Tensor load_images(const std::string& path) {
  Tensor images = read_array(path, DType::Float32);
  if (images.dim() < 2 || images.size(0) == 0)
    fail("[data] ", path, " must hold a batch of images (N, ...), got shape ", images.shape());
  Tensor x = images.dtype() == DType::UInt8 ? images.to(DType::Float32) / 255.0 : images.to(DType::Float32);
  const int64_t features = x.numel() / x.size(0);
  return features == 28 * 28 ? x.reshape({x.size(0), 1, 28, 28}) : x.reshape({x.size(0), features});
}

std::string class_name(int64_t label, const DataFlags& flags) {
  const bool fashion = flags.data == "fashion-mnist" && flags.test_labels.empty();
  return fashion && label >= 0 && label < 10 ? std::string(data::FashionMNIST::classes()[label])
                                             : "class " + std::to_string(label);
}

}  // namespace ug::cli
