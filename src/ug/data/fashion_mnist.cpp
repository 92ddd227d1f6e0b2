#include "ug/data/fashion_mnist.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ug/data/idx.h"

namespace ug::data {

namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kPixels = kSide * kSide;

/** root/stem.gz, or else root/stem uncompressed (as torchvision's raw/ folder holds it). */
std::string find_file(const std::string& root, const std::string& stem) {
  const std::filesystem::path dir(root);
  for (const std::string& name : {stem + ".gz", stem})
    if (std::filesystem::exists(dir / name)) return (dir / name).string();
  throw FileNotFoundError(detail::cat(
      "[FashionMNIST] missing ", (dir / (stem + ".gz")).string(), " (nor ", stem,
      " uncompressed there): install Debian's package with `sudo apt-get install dataset-fashion-mnist`, or point "
      "root (or the FASHION_MNIST_DIR variable) at a folder holding train-images-idx3-ubyte.gz, "
      "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz"));
}

}  // namespace

int64_t FashionMNIST::checked_index(int64_t index) const {
  const int64_t i = index < 0 ? index + size() : index;
  if (i < 0 || i >= size())
    fail<IndexError>("[FashionMNIST] index ", index, " is out of range for ", size(), " samples");
  return i;
}

std::string FashionMNIST::default_root() {
  const char* dir = std::getenv("FASHION_MNIST_DIR");
  return dir && *dir ? dir : "/usr/share/datasets/fashion-mnist";
}

const std::array<std::string_view, 10>& FashionMNIST::classes() {
  static const std::array<std::string_view, 10> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

FashionMNIST::FashionMNIST(std::string root, bool train, transforms::TransformPtr transform,
                           transforms::TransformPtr target_transform)
    : root_(root.empty() ? default_root() : std::move(root)),
      train_(train),
      transform_(std::move(transform)),
      target_transform_(std::move(target_transform)) {
  const std::string split = train ? "train" : "t10k";
  const std::string images_path = find_file(root_, split + "-images-idx3-ubyte");
  const std::string labels_path = find_file(root_, split + "-labels-idx1-ubyte");
  data_ = read_idx(images_path);
  const Tensor labels = read_idx(labels_path);
  if (data_.dtype() != DType::UInt8 || data_.dim() != 3 || data_.size(1) != kSide || data_.size(2) != kSide)
    fail("[FashionMNIST] ", images_path, " holds ", data_.dtype(), " of shape ", data_.shape(),
         ", not uint8 images of shape (N, 28, 28)");
  if (labels.dtype() != DType::UInt8 || labels.dim() != 1 || labels.size(0) != data_.size(0))
    fail("[FashionMNIST] ", labels_path, " holds ", labels.dtype(), " of shape ", labels.shape(), ", not ",
         data_.size(0), " uint8 labels");
  if (labels.numel() > 0 && labels.max().item<int64_t>() >= static_cast<int64_t>(classes().size()))
    fail("[FashionMNIST] ", labels_path, " holds a label above 9");
  targets_ = labels.to(DType::Int64);
}

Example FashionMNIST::get(int64_t index) const {
  const int64_t i = checked_index(index);
  Tensor image = transforms::ToTensor()(data_.select(0, i));  // (1, 28, 28) float32 in [0, 1]
  Tensor label = targets_.select(0, i).clone();
  if (transform_) image = (*transform_)(image);
  if (target_transform_) label = (*target_transform_)(label);
  return {image, label};
}

Example FashionMNIST::get_batch(std::span<const int64_t> indices) const {
  if (indices.empty()) fail("[FashionMNIST.get_batch] expected at least one index");
  const int64_t n = static_cast<int64_t>(indices.size());
  Tensor gathered = empty({n, kSide, kSide, 1}, {.dtype = DType::UInt8, .device = {}});
  Tensor labels = empty({n}, {.dtype = DType::Int64, .device = {}});
  const uint8_t* pixels = data_.data_ptr<uint8_t>();
  const int64_t* all_labels = targets_.data_ptr<int64_t>();
  uint8_t* out = gathered.data_ptr<uint8_t>();
  int64_t* out_labels = labels.data_ptr<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = checked_index(indices[k]);
    std::memcpy(out + k * kPixels, pixels + i * kPixels, kPixels);
    out_labels[k] = all_labels[i];
  }
  Tensor images = transforms::ToTensor()(gathered);  // (N, 1, 28, 28) float32 in [0, 1]
  if (transform_) images = (*transform_)(images);
  if (target_transform_) labels = (*target_transform_)(labels);
  return {images, labels};
}

}  // namespace ug::data
