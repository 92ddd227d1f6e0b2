// Bilinear (torch.nn.Bilinear): weight [out, in1, in2] and bias [out], both U(-1/sqrt(in1),
// 1/sqrt(in1)) as torch initialises them, over F::bilinear.
#pragma once

#include <cmath>

#include "ug/nn/functional/bilinear.h"
#include "ug/nn/init.h"
#include "ug/nn/module.h"

namespace ug::nn {

class BilinearImpl : public Module {
  UG_CLONEABLE(BilinearImpl)
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true)
      : Module("Bilinear"), in1_(in1_features), in2_(in2_features), out_(out_features), has_bias_(bias) {
    if (in1_ <= 0 || in2_ <= 0 || out_ <= 0)
      fail("[Bilinear] the feature counts must be positive, got ", in1_, ", ", in2_, " and ", out_);
    register_parameter("weight", empty({out_, in1_, in2_}));
    register_parameter("bias", bias ? empty({out_}) : Tensor());
    reset_parameters();
  }
  void reset_parameters() override {
    const double bound = 1 / std::sqrt(static_cast<double>(in1_));
    init::uniform_(parameter("weight"), -bound, bound);
    if (Tensor& b = parameter("bias"); b.defined()) init::uniform_(b, -bound, bound);
  }
  Tensor forward(const Tensor& x1, const Tensor& x2) {
    return functional::bilinear(x1, x2, parameter("weight"), parameter("bias"));
  }
  std::string extra_repr() const override {
    return "in1_features=" + std::to_string(in1_) + ", in2_features=" + std::to_string(in2_) +
           ", out_features=" + std::to_string(out_) + ", bias=" + (has_bias_ ? "True" : "False");
  }

 private:
  int64_t in1_, in2_, out_;
  bool has_bias_;
};
UG_MODULE(Bilinear);

}  // namespace ug::nn
