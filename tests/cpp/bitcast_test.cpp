#include "ug/ops/bitcast.h"

#include <gtest/gtest.h>

#include <cstring>

#include "ug/ug.h"

namespace {

using ug::DType;
using ug::Tensor;

TEST(Bitcast, ViewSharesTheStorageAndReadsTheBits) {
  Tensor x = ug::tensor({1.0, -2.0, 0.5}, {.dtype = DType::Float32});
  Tensor v = ug::view(x, DType::Int32);
  EXPECT_EQ(v.raw_data(), x.raw_data());
  EXPECT_EQ(v.shape(), ug::Shape{3});
  float f = -2.0f;
  int32_t expected = 0;
  std::memcpy(&expected, &f, sizeof f);
  EXPECT_EQ(v[1].item<int64_t>(), expected);
  v.fill_(0);  // writes through the view reach x
  EXPECT_EQ(x.sum().item<double>(), 0.0);
}

TEST(Bitcast, ViewFollowsTorchsLayoutRule) {
  Tensor x = ug::zeros({3, 4}, {.dtype = DType::Float32});
  Tensor halves = ug::view(x.slice(0, 1, 3), DType::Float16);  // smaller: the last dim doubles
  EXPECT_EQ(halves.shape(), (ug::Shape{2, 8}));
  EXPECT_EQ(halves.strides(), (ug::Strides{8, 1}));
  EXPECT_EQ(halves.storage_offset(), 8);
  Tensor doubles = ug::view(x, DType::Float64);  // larger: the last dim halves
  EXPECT_EQ(doubles.shape(), (ug::Shape{3, 2}));
  EXPECT_EQ(doubles.strides(), (ug::Strides{2, 1}));
  EXPECT_THROW(ug::view(x.t(), DType::Float16), ug::RuntimeError);                   // last stride 3
  EXPECT_THROW(ug::view(x.slice(1, 1, 4), DType::Float64), ug::RuntimeError);        // last size 3
  EXPECT_THROW(ug::view(ug::scalar_tensor(1.0), DType::Float16), ug::RuntimeError);  // 0-d
  EXPECT_FALSE(ug::view(ug::ones({2}).requires_grad_(), DType::Float32).requires_grad());
}

TEST(Bitcast, ConvertTypeFollowsJaxsShapeRule) {
  Tensor x = ug::zeros({2, 3}, {.dtype = DType::Float32});
  EXPECT_EQ(ug::bitcast_convert_type(x, DType::Int32).shape(), (ug::Shape{2, 3}));
  EXPECT_EQ(ug::bitcast_convert_type(x, DType::UInt8).shape(), (ug::Shape{2, 3, 4}));
  Tensor pairs = ug::zeros({3, 2}, {.dtype = DType::Float32});
  Tensor doubles = ug::bitcast_convert_type(pairs, DType::Float64);
  EXPECT_EQ(doubles.shape(), ug::Shape{3});
  EXPECT_NE(doubles.raw_data(), pairs.raw_data());  // a copy, as JAX's
  EXPECT_THROW(ug::bitcast_convert_type(x, DType::Float64), ug::ValueError);
  EXPECT_THROW(ug::bitcast_convert_type(x, DType::Bool), ug::TypeError);
}

}  // namespace
