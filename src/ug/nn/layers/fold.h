// Unfold and Fold (torch.nn's), over F::unfold / F::fold; the sizes print as they were given.
#pragma once

#include "ug/nn/functional/fold.h"
#include "ug/nn/module.h"

namespace ug::nn {

class UnfoldImpl : public Module {
  UG_CLONEABLE(UnfoldImpl)
 public:
  explicit UnfoldImpl(Dims kernel_size, Dims dilation = {1}, Dims padding = {0}, Dims stride = {1})
      : Module("Unfold"),
        kernel_(std::move(kernel_size)),
        dilation_(std::move(dilation)),
        padding_(std::move(padding)),
        stride_(std::move(stride)) {}
  Tensor forward(const Tensor& x) override { return functional::unfold(x, kernel_, dilation_, padding_, stride_); }
  std::string extra_repr() const override {
    return "kernel_size=" + size_repr(kernel_) + ", dilation=" + size_repr(dilation_) +
           ", padding=" + size_repr(padding_) + ", stride=" + size_repr(stride_);
  }

 private:
  Dims kernel_, dilation_, padding_, stride_;
};
UG_MODULE(Unfold);

class FoldImpl : public Module {
  UG_CLONEABLE(FoldImpl)
 public:
  FoldImpl(Dims output_size, Dims kernel_size, Dims dilation = {1}, Dims padding = {0}, Dims stride = {1})
      : Module("Fold"),
        output_size_(std::move(output_size)),
        kernel_(std::move(kernel_size)),
        dilation_(std::move(dilation)),
        padding_(std::move(padding)),
        stride_(std::move(stride)) {}
  Tensor forward(const Tensor& x) override {
    return functional::fold(x, output_size_, kernel_, dilation_, padding_, stride_);
  }
  std::string extra_repr() const override {
    return "output_size=" + size_repr(output_size_) + ", kernel_size=" + size_repr(kernel_) +
           ", dilation=" + size_repr(dilation_) + ", padding=" + size_repr(padding_) + ", stride=" + size_repr(stride_);
  }

 private:
  Dims output_size_, kernel_, dilation_, padding_, stride_;
};
UG_MODULE(Fold);

}  // namespace ug::nn
