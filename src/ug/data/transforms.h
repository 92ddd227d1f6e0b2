// Image transforms with torchvision.transforms' names. Each takes one image (C, H, W) or a
// batch (N, C, H, W) and works on the whole batch in one pass; the random ones draw their
// choices per image from ug::default_generator(), so a GeneratorScope makes them repeatable.
// They prepare data: their outputs carry no gradient.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::data::transforms {

class Transform {
 public:
  virtual ~Transform() = default;
  virtual Tensor operator()(const Tensor& input) const = 0;
  /** torchvision's printout: "Normalize(mean=[0.5], std=[0.25])". */
  virtual std::string repr() const = 0;
};
using TransformPtr = std::shared_ptr<Transform>;

/** (x - mean[c]) / std[c] per channel c (dim -3) of a float32/float64 image; one value for
 *  mean or std stands for every channel. */
class Normalize : public Transform {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std, bool inplace = false);
  Tensor operator()(const Tensor& input) const override;
  std::string repr() const override;
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& std() const { return std_; }

 private:
  std::vector<double> mean_, std_;
  bool inplace_;
};

/** How RandomCrop fills the padding: a constant, the edge pixel, a mirror without the edge
 *  (reflect: 3 2 | 1 2 3) or with it (symmetric: 2 1 | 1 2 3), as torchvision's modes. */
enum class PaddingMode { Constant, Edge, Reflect, Symmetric };
PaddingMode padding_mode_from_name(const std::string& name);

/** A crop of `size` (height, width) at a random place of the image padded by `padding`:
 *  {} or {all}, {left/right, top/bottom} or {left, top, right, bottom}, as torchvision's. With
 *  pad_if_needed, an image smaller than the crop is padded further on both sides. */
class RandomCrop : public Transform {
 public:
  RandomCrop(std::vector<int64_t> size, std::vector<int64_t> padding = {}, bool pad_if_needed = false, double fill = 0,
             PaddingMode padding_mode = PaddingMode::Constant);
  Tensor operator()(const Tensor& input) const override;
  std::string repr() const override;

 private:
  int64_t height_, width_;
  int64_t left_, top_, right_, bottom_;
  bool pad_if_needed_;
  double fill_;
  PaddingMode mode_;
};

/** Mirrors each image left-right with probability p. */
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& input) const override;
  std::string repr() const override;

 private:
  double p_;
};

/** uint8 images (H, W), (H, W, C) or a batch (N, H, W, C) to float32 (C, H, W) / (N, C, H, W)
 *  in [0, 1]; a floating tensor is taken as converted already and returned as it is. */
class ToTensor : public Transform {
 public:
  Tensor operator()(const Tensor& input) const override;
  std::string repr() const override { return "ToTensor()"; }
};

/** The transforms one after another. */
class Compose : public Transform {
 public:
  explicit Compose(std::vector<TransformPtr> transforms);
  Tensor operator()(const Tensor& input) const override;
  std::string repr() const override;
  const std::vector<TransformPtr>& transforms() const { return transforms_; }

 private:
  std::vector<TransformPtr> transforms_;
};

/** Any function as a transform. */
class Lambda : public Transform {
 public:
  explicit Lambda(std::function<Tensor(const Tensor&)> fn);
  Tensor operator()(const Tensor& input) const override { return fn_(input); }
  std::string repr() const override { return "Lambda()"; }
  const std::function<Tensor(const Tensor&)>& function() const { return fn_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
};

}  // namespace ug::data::transforms
