// ug::nn's Keras layers (Conv2D, MaxPooling2D, BatchNormalization, ...): channels last, built by
// the first call, kernels in Keras's layout.
#include "test_util.h"

namespace ug {
namespace {

TEST(KerasLayers, Conv2DBuildsOnFirstCallInKerasLayout) {
  nn::Conv2D conv(8, {3}, {.strides = {2}, .padding = "same", .activation = "relu"});
  EXPECT_FALSE(conv->built());
  EXPECT_TRUE(conv->parameters().empty());
  Tensor y = conv(zeros({2, 9, 9, 3}));
  EXPECT_TRUE(conv->built());
  EXPECT_EQ(y.shape(), Shape({2, 5, 5, 8}));  // "same": ceil(9 / 2)
  EXPECT_EQ(conv->kernel().shape(), Shape({3, 3, 3, 8}));
  EXPECT_EQ(conv->bias().shape(), Shape({8}));
  EXPECT_EQ(conv->num_parameters(), 3 * 3 * 3 * 8 + 8);
}

TEST(KerasLayers, ChannelsFirstAndPoolingShapes) {
  nn::Conv1D conv(4, 3, {.padding = "causal", .data_format = "channels_first"});
  EXPECT_EQ(conv(zeros({2, 5, 7})).shape(), Shape({2, 4, 7}));
  EXPECT_EQ(conv->kernel().shape(), Shape({3, 5, 4}));
  nn::MaxPooling2D pool({3}, {.strides = {2}, .padding = "same"});
  EXPECT_EQ(pool(zeros({1, 7, 8, 3})).shape(), Shape({1, 4, 4, 3}));
  nn::GlobalAveragePooling2D gap;
  EXPECT_EQ(gap(ones({2, 4, 4, 6})).shape(), Shape({2, 6}));
}

TEST(KerasLayers, BatchNormalizationNormalizesTheLastAxis) {
  nn::BatchNormalization bn;
  EXPECT_EQ(nn::BatchNormalization({.axis = 1, .momentum = 0.9})->options().axis, 1);
  Tensor x = arange(24, {.dtype = DType::Float32, .device = {}}).reshape({4, 6});
  Tensor y = bn(x);
  EXPECT_EQ(bn->parameter("gamma").shape(), Shape({6}));
  EXPECT_NEAR(test::values(y.mean())[0], 0, 1e-5);
  // The moving mean moved 1% of the way to the batch's mean (Keras's momentum 0.99).
  EXPECT_NEAR(test::values(bn->buffer("moving_mean").mean())[0], 0.01 * 11.5, 1e-5);
}

TEST(KerasLayers, NamesAreKerasStyleOrGiven) {
  EXPECT_EQ(nn::keras_layer_name("BatchNormalization", "bn"), "bn");
  const std::string first = nn::keras_layer_name("GlobalMaxPooling2D", "");
  EXPECT_TRUE(first.starts_with("global_max_pooling2d"));
  EXPECT_NE(nn::keras_layer_name("GlobalMaxPooling2D", ""), first);
  EXPECT_EQ(nn::Conv2D(4, {3}, {.name = "stem"})->name(), "stem");
}

TEST(KerasLayers, BadArgumentsAreNamed) {
  EXPECT_THROW(nn::Conv2D(4, Dims{3, 3, 3}), ValueError);
  EXPECT_THROW(nn::Conv2D(4, {3}, {.padding = "full"}), ValueError);
  nn::Conv2D conv(4, Dims{3});
  EXPECT_THROW(conv(zeros({5, 5, 3})), ValueError);
}

}  // namespace
}  // namespace ug
