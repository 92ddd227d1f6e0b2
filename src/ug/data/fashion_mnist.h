// Fashion-MNIST (Zalando): 60000 training and 10000 test 28x28 grey images of clothes in ten
// classes, read from the four IDX files of Debian's dataset-fashion-mnist package.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "ug/data/dataset.h"
#include "ug/data/transforms.h"

namespace ug::data {

class FashionMNIST : public Dataset {
 public:
  /** Where the files live unless a root is given: $FASHION_MNIST_DIR if set, else
   *  /usr/share/datasets/fashion-mnist (Debian's package). */
  static std::string default_root();
  /** The class names, by label: "T-shirt/top", "Trouser", ... "Ankle boot". */
  static const std::array<std::string_view, 10>& classes();

  /** Reads the training (60000) or test (10000) split from root ("" for default_root()),
   *  the files gzip-compressed or not. An absent file raises ug::FileNotFoundError naming it
   *  and the package to install. `transform` gets the float images, `target_transform` the
   *  int64 labels: one sample from get, the whole batch from get_batch. */
  explicit FashionMNIST(std::string root = "", bool train = true, transforms::TransformPtr transform = nullptr,
                        transforms::TransformPtr target_transform = nullptr);

  int64_t size() const override { return targets_.numel(); }
  /** {image (1, 28, 28) float32 in [0, 1], then transformed; label, an int64 scalar}. */
  Example get(int64_t index) const override;
  /** {images (N, 1, 28, 28), labels (N,)}: one gather and conversion for the whole batch,
   *  then each transform once. Negative indices count from the end. */
  Example get_batch(std::span<const int64_t> indices) const override;

  /** The images as stored: (N, 28, 28) uint8, as torchvision's `data`. */
  const Tensor& data() const { return data_; }
  /** The labels: (N,) int64, as torchvision's `targets`. */
  const Tensor& targets() const { return targets_; }
  const std::string& root() const { return root_; }
  bool train() const { return train_; }
  const transforms::TransformPtr& transform() const { return transform_; }
  const transforms::TransformPtr& target_transform() const { return target_transform_; }

 private:
  /** index, counted from the end when negative; IndexError when out of range. */
  int64_t checked_index(int64_t index) const;

  std::string root_;
  bool train_;
  transforms::TransformPtr transform_, target_transform_;
  Tensor data_, targets_;
};

}  // namespace ug::data
