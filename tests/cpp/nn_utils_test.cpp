// Lazy convolutions and norms in C++ (in_channels / num_features < 0), the conv + batch norm
// fusion, AlphaDropout.
#include "test_util.h"
#include "ug/nn/fusion.h"
#include "ug/nn/layers/alpha_dropout.h"
#include "ug/nn/nn.h"

namespace ug {
namespace {

TEST(NnUtils, LazyConvAndBatchNormTakeTheFirstInputsChannels) {
  nn::Conv2d conv(-1, 4, Dims{3});
  EXPECT_FALSE(conv->parameter("weight").defined());
  EXPECT_EQ(conv->to_string(), "Conv2d(0, 4, kernel_size=(3, 3), stride=(1, 1))");
  nn::BatchNorm2d bn(-1);
  conv->set_type_name("LazyConv2d");
  Tensor y = bn(conv(randn({2, 3, 5, 5})));
  EXPECT_EQ(y.shape(), test::shape({2, 4, 3, 3}));
  EXPECT_EQ(conv->type_name(), "Conv2d");
  EXPECT_EQ(conv->parameter("weight").shape(), test::shape({4, 3, 3, 3}));
  EXPECT_EQ(bn->buffer("running_mean").shape(), test::shape({4}));
  EXPECT_EQ(bn->num_parameters(), 8);
}

TEST(NnUtils, LazyLayersInAContainerTakeTheShapesOfALoadedState) {
  // A checkpoint restored into a freshly built model before any forward (torch's _lazy_load_hook).
  nn::Sequential trained(nn::Conv2d(3, 4, Dims{3}), nn::BatchNorm2d(4), nn::Flatten(), nn::Linear(36, 2));
  trained->train(false);
  nn::Sequential lazy(nn::Conv2d(-1, 4, Dims{3}), nn::BatchNorm2d(-1), nn::Flatten(), nn::Linear(-1, 2));
  lazy->train(false);
  lazy->load_state_dict(trained->state_dict());
  EXPECT_EQ(lazy->state_dict().keys(), trained->state_dict().keys());
  Tensor x = randn({2, 3, 5, 5});
  test::expect_values(lazy(x), test::values(trained(x)), 0.0);
  nn::Sequential wrong(nn::Linear(-1, 2));
  EXPECT_THROW(wrong->load_state_dict({{"0.weight", zeros({2, 5})}, {"0.bias", zeros({3})}}), ValueError);
}

TEST(NnUtils, FusedConvComputesWhatConvThenBatchNormDid) {
  nn::Conv2d conv(3, 4, Dims{3});
  nn::BatchNorm2d bn(4);
  bn(conv(randn({8, 3, 6, 6})));  // running statistics away from 0 and 1
  conv->eval();
  bn->eval();
  auto fused = nn::utils::fuse_conv_bn_eval(*conv, *bn);
  const Tensor x = randn({2, 3, 6, 6});
  const Tensor expected = bn(conv(x));
  // Each output sums 27 products, scaled by gamma / sqrt(var + eps): two orders differ by at
  // most 2 * 27 * eps * (the scaled sum of |products|).
  Tensor scale = ((bn->buffer("running_var") + 1e-5).rsqrt() * bn->parameter("weight").abs()).view({1, 4, 1, 1});
  Tensor terms = conv2d(x.abs(), conv->parameter("weight").abs()) * scale;
  const double tol = 2 * 27 * 1.2e-7 * terms.max().item<double>() + 1e-6;
  test::expect_values((*fused)(x), test::values(expected), tol);
  EXPECT_THROW(nn::utils::fuse_conv_bn_eval(*conv, *nn::BatchNorm2d(4).ptr()), ValueError);  // bn in training
}

TEST(NnUtils, AlphaDropoutIsTheIdentityInEval) {
  nn::AlphaDropout drop(0.5);
  drop->eval();
  const Tensor x = randn({10});
  test::expect_values(drop(x), test::values(x), 0.0);
  EXPECT_EQ(drop->to_string(), "AlphaDropout(p=0.5, inplace=False)");
}

}  // namespace
}  // namespace ug
