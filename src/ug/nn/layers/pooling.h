// MaxUnpool1d/2d/3d, LPPool1d/2d/3d, ChannelShuffle and LocalResponseNorm (torch.nn's), over
// F::max_unpool, F::lp_pool, F::channel_shuffle and F::local_response_norm.
#pragma once

#include <cmath>
#include <optional>
#include <sstream>

#include "ug/core/python_repr.h"
#include "ug/nn/functional/normalization.h"
#include "ug/nn/functional/pooling.h"
#include "ug/nn/module.h"

namespace ug::nn {

/** Max unpooling over the last `dims` (1 to 3) dims; the sizes print per dim, as torch's. */
class MaxUnpoolImpl : public Module {
  UG_CLONEABLE(MaxUnpoolImpl)
 public:
  MaxUnpoolImpl(int64_t dims, Dims kernel_size, Dims stride = {}, Dims padding = {0})
      : Module("MaxUnpool" + std::to_string(dims) + "d"),
        dims_(dims),
        kernel_(spread(kernel_size)),
        stride_(stride.empty() ? kernel_ : spread(stride)),
        padding_(spread(padding)) {}
  Tensor forward(const Tensor& x, const Tensor& indices, const std::optional<Dims>& output_size = {}) {
    return functional::max_unpool(dims_, x, indices, kernel_, stride_, padding_, output_size);
  }
  std::string extra_repr() const override {
    return "kernel_size=" + tuple_repr(kernel_) + ", stride=" + tuple_repr(stride_) +
           ", padding=" + tuple_repr(padding_);
  }

 private:
  Dims spread(const Dims& d) const { return d.size() == 1 ? Dims(static_cast<size_t>(dims_), d[0]) : d; }
  int64_t dims_;
  Dims kernel_, stride_, padding_;
};

/** Power-average pooling over the last `dims` (1 to 3) dims; stride defaults to kernel_size. */
class LPPoolImpl : public Module {
  UG_CLONEABLE(LPPoolImpl)
 public:
  LPPoolImpl(int64_t dims, double norm_type, Dims kernel_size, Dims stride = {}, bool ceil_mode = false)
      : Module("LPPool" + std::to_string(dims) + "d"),
        dims_(dims),
        norm_type_(norm_type),
        kernel_(std::move(kernel_size)),
        stride_(std::move(stride)),
        ceil_mode_(ceil_mode) {}
  Tensor forward(const Tensor& x) override {
    return functional::lp_pool(dims_, x, norm_type_, kernel_, stride_, ceil_mode_);
  }
  std::string extra_repr() const override {
    std::ostringstream s;
    // An integral norm_type prints as the int it is usually given as (torch prints it as given).
    s << "norm_type="
      << (norm_type_ == std::floor(norm_type_) && std::isfinite(norm_type_) ? std::to_string(int64_t(norm_type_))
                                                                            : python_repr(norm_type_))
      << ", kernel_size=" << size_repr(kernel_) << ", stride=" << (stride_.empty() ? "None" : size_repr(stride_))
      << ", ceil_mode=" << (ceil_mode_ ? "True" : "False");
    return s.str();
  }

 private:
  int64_t dims_;
  double norm_type_;
  Dims kernel_, stride_;
  bool ceil_mode_;
};

#define UG_POOLING_LAYER(Name, Base, Dims_)                                                                 \
  class Name##Impl : public Base##Impl {                                                                    \
    UG_CLONEABLE(Name##Impl)                                                                                \
   public:                                                                                                  \
    template <class... A> explicit Name##Impl(A&&... args) : Base##Impl(Dims_, std::forward<A>(args)...) {} \
  };                                                                                                        \
  UG_MODULE(Name);
UG_POOLING_LAYER(MaxUnpool1d, MaxUnpool, 1)
UG_POOLING_LAYER(MaxUnpool2d, MaxUnpool, 2)
UG_POOLING_LAYER(MaxUnpool3d, MaxUnpool, 3)
UG_POOLING_LAYER(LPPool1d, LPPool, 1)
UG_POOLING_LAYER(LPPool2d, LPPool, 2)
UG_POOLING_LAYER(LPPool3d, LPPool, 3)
#undef UG_POOLING_LAYER

class ChannelShuffleImpl : public Module {
  UG_CLONEABLE(ChannelShuffleImpl)
 public:
  explicit ChannelShuffleImpl(int64_t groups) : Module("ChannelShuffle"), groups_(groups) {}
  Tensor forward(const Tensor& x) override { return functional::channel_shuffle(x, groups_); }
  std::string extra_repr() const override { return "groups=" + std::to_string(groups_); }

 private:
  int64_t groups_;
};
UG_MODULE(ChannelShuffle);

class LocalResponseNormImpl : public Module {
  UG_CLONEABLE(LocalResponseNormImpl)
 public:
  explicit LocalResponseNormImpl(int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0)
      : Module("LocalResponseNorm"), size_(size), alpha_(alpha), beta_(beta), k_(k) {}
  Tensor forward(const Tensor& x) override { return functional::local_response_norm(x, size_, alpha_, beta_, k_); }
  std::string extra_repr() const override {
    return std::to_string(size_) + ", alpha=" + python_repr(alpha_) + ", beta=" + python_repr(beta_) +
           ", k=" + python_repr(k_);
  }

 private:
  int64_t size_;
  double alpha_, beta_, k_;
};
UG_MODULE(LocalResponseNorm);

}  // namespace ug::nn
