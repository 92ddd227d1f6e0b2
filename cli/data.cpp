#include "data.h"

#include <array>
#include <cstdlib>
#include <filesystem>

#include "ug/core/error.h"
#include "ug/data/idx.h"
#include "ug/data/npy.h"
#include "ug/ops/binary.h"

namespace ug::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::array<const char*, 10> kFashionClasses = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

std::string fashion_mnist_dir() {
  const char* env = std::getenv("FASHION_MNIST_DIR");
  return env && *env ? env : "/usr/share/datasets/fashion-mnist";
}

/** The IDX file `stem` in `dir`, gzip-compressed or not. */
std::string idx_in(const std::string& dir, const std::string& stem, bool default_set) {
  for (const std::string& name : {stem + ".gz", stem})
    if (fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  fail("[data] ", (fs::path(dir) / (stem + ".gz")).string(), " is missing",
       default_set ? "; install Fashion-MNIST with `sudo apt-get install dataset-fashion-mnist` or set "
                     "FASHION_MNIST_DIR to a folder holding its four files"
                   : "");
}

Tensor read_array(const std::string& path) {
  if (!fs::exists(path)) fail("[data] ", path, " does not exist");
  return path.ends_with(".npy") ? data::read_npy(path) : data::read_idx(path);
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
  if (images_path.empty()) {
    const bool default_set = flags.data == "fashion-mnist";
    const std::string dir = default_set ? fashion_mnist_dir() : flags.data;
    const std::string prefix = train ? "train" : "t10k";
    images_path = idx_in(dir, prefix + "-images-idx3-ubyte", default_set);
    labels_path = idx_in(dir, prefix + "-labels-idx1-ubyte", default_set);
  }
  Tensor images = load_images(images_path), labels = read_array(labels_path);
  if (labels.dim() != 1 || images.size(0) != labels.size(0))
    fail("[data] ", images_path, " and ", labels_path, " must hold N images and N labels; got ", images.size(0),
         " images and labels of shape ", labels.shape());
  if (is_floating(labels.dtype())) fail("[data] ", labels_path, " holds ", labels.dtype(), " labels; expected integers");
  return {images, labels.to(DType::Int64)};
}

Tensor load_images(const std::string& path) {
  Tensor images = read_array(path);
  if (images.dim() < 2 || images.size(0) == 0)
    fail("[data] ", path, " must hold a batch of images (N, ...), got shape ", images.shape());
  Tensor x = images.dtype() == DType::UInt8 ? images.to(DType::Float32) / 255.0 : images.to(DType::Float32);
  const int64_t features = x.numel() / x.size(0);
  return features == 28 * 28 ? x.reshape({x.size(0), 1, 28, 28}) : x.reshape({x.size(0), features});
}

std::string class_name(int64_t label, const DataFlags& flags) {
  const bool fashion = flags.data == "fashion-mnist" && flags.test_labels.empty();
  return fashion && label >= 0 && label < 10 ? kFashionClasses[label] : "class " + std::to_string(label);
}

}  // namespace ug::cli
