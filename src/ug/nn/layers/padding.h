// Padding layers over ug::pad: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and
// CircularPad, each 1d, 2d and 3d, as torch.nn's.
#pragma once

#include <optional>
#include <string>

#include "ug/nn/module.h"

namespace ug::nn {

/** Pads the last `dims` dims by `padding`, (left, right) pairs from the last dim (one size pads
 *  every side), in ug::pad's `mode`; `value` fills constant padding (shown when given). */
class PadImpl : public Module {
  UG_CLONEABLE(PadImpl)
 public:
  PadImpl(std::string type_name, int64_t dims, Dims padding, std::string mode, std::optional<double> value = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  const Dims& padding() const { return padding_; }

 private:
  Dims padding_;
  std::string mode_;
  std::optional<double> value_;
};

#define UG_PAD(Name, Dims_, Mode)                                                          \
  class Name##Impl : public PadImpl {                                                      \
    UG_CLONEABLE(Name##Impl)                                                               \
   public:                                                                                 \
    explicit Name##Impl(Dims padding) : PadImpl(#Name, Dims_, std::move(padding), Mode) {} \
  };                                                                                       \
  UG_MODULE(Name);
#define UG_CONSTANT_PAD(Name, Dims_)                                                                         \
  class Name##Impl : public PadImpl {                                                                        \
    UG_CLONEABLE(Name##Impl)                                                                                 \
   public:                                                                                                   \
    Name##Impl(Dims padding, double value) : PadImpl(#Name, Dims_, std::move(padding), "constant", value) {} \
  };                                                                                                         \
  UG_MODULE(Name);

UG_PAD(ZeroPad1d, 1, "constant")
UG_PAD(ZeroPad2d, 2, "constant")
UG_PAD(ZeroPad3d, 3, "constant")
UG_CONSTANT_PAD(ConstantPad1d, 1)
UG_CONSTANT_PAD(ConstantPad2d, 2)
UG_CONSTANT_PAD(ConstantPad3d, 3)
UG_PAD(ReflectionPad1d, 1, "reflect")
UG_PAD(ReflectionPad2d, 2, "reflect")
UG_PAD(ReflectionPad3d, 3, "reflect")
UG_PAD(ReplicationPad1d, 1, "replicate")
UG_PAD(ReplicationPad2d, 2, "replicate")
UG_PAD(ReplicationPad3d, 3, "replicate")
UG_PAD(CircularPad1d, 1, "circular")
UG_PAD(CircularPad2d, 2, "circular")
UG_PAD(CircularPad3d, 3, "circular")
#undef UG_PAD
#undef UG_CONSTANT_PAD

}  // namespace ug::nn
