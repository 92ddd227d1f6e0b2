// Tensor methods of torch's that live in C++ (their Python forms bind them): random_, fill_diagonal_,
// dim_order, and nn.Buffer's mark on the tensor. Values are torch 2.13's.
#include <algorithm>
#include <limits>
#include <set>

#include "test_util.h"

namespace ug {
namespace {

using test::expect_tensor;
using test::values;

std::set<double> distinct(const Tensor& t) {
  const std::vector<double> v = values(t);
  return {v.begin(), v.end()};
}

TEST(TensorMethods, FillDiagonalWritesTorchsOffsets) {
  Tensor square = zeros({3, 3});
  EXPECT_EQ(&square.fill_diagonal_(2), &square);
  expect_tensor(square, {3, 3}, {2, 0, 0, 0, 2, 0, 0, 0, 2});
  // a tall matrix: its square part, or with wrap every columns + 1 rows
  expect_tensor(zeros({5, 2}).fill_diagonal_(1), {5, 2}, {1, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  expect_tensor(zeros({5, 2}).fill_diagonal_(1, true), {5, 2}, {1, 0, 0, 1, 0, 0, 1, 0, 0, 1});
  expect_tensor(zeros({2, 4}).fill_diagonal_(-1, true), {2, 4}, {-1, 0, 0, 0, 0, -1, 0, 0});
  expect_tensor(zeros({2, 2, 2}).fill_diagonal_(3), {2, 2, 2}, {3, 0, 0, 0, 0, 0, 0, 3});
  Tensor base = zeros({3, 4});
  base.t().slice(0, 1, {}).fill_diagonal_(5);  // a strided view: the base changes
  expect_tensor(base, {3, 4}, {0, 5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5});
  EXPECT_THROW(zeros({3}).fill_diagonal_(1), RuntimeError);
  EXPECT_THROW(zeros({2, 3, 2}).fill_diagonal_(1), RuntimeError);
}

TEST(TensorMethods, FillDiagonalOfANonLeafStopsItsGradient) {
  const Tensor x = ones({2, 2}).requires_grad_();
  Tensor y = x * 3.0;
  y.fill_diagonal_(7);
  y.sum().backward();
  expect_tensor(x.grad(), {2, 2}, {0, 3, 3, 0});
}

TEST(TensorMethods, RandomDrawsTorchsRanges) {
  manual_seed(0);
  Tensor ints = zeros({3000}, {.dtype = int32});
  EXPECT_EQ(&random_(ints, -3, 2), &ints);
  EXPECT_EQ(ints.dtype(), int32);
  EXPECT_EQ(distinct(ints), (std::set<double>{-3, -2, -1, 0, 1}));
  Tensor floats = zeros({3000});
  EXPECT_EQ(distinct(random_(floats, 5)), (std::set<double>{0, 1, 2, 3, 4}));
  Tensor small = zeros({3000}, {.dtype = int8});
  EXPECT_EQ(distinct(random_(small, 120, std::nullopt)), (std::set<double>{120, 121, 122, 123, 124, 125, 126, 127}));
  Tensor halves = zeros({3000}, {.dtype = float16});
  EXPECT_EQ(distinct(random_(halves, 2045, std::nullopt)), (std::set<double>{2045, 2046, 2047, 2048}));
  // to absent: up to int64's largest, which randint's exclusive high cannot name
  constexpr int64_t top = std::numeric_limits<int64_t>::max();
  Tensor wide = zeros({300}, {.dtype = int64});
  random_(wide, top - 2, std::nullopt);
  std::set<int64_t> got;
  for (int64_t i = 0; i < wide.numel(); ++i) got.insert(wide.data_ptr<int64_t>()[i]);
  EXPECT_EQ(got, (std::set<int64_t>{top - 2, top - 1, top}));
  // random_() spans [0, 2^24] for float32
  const std::vector<double> v = values(random_(floats));
  EXPECT_GT(*std::max_element(v.begin(), v.end()), double(1 << 23));
  EXPECT_LE(*std::max_element(v.begin(), v.end()), double(1 << 24));
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
}

TEST(TensorMethods, RandomRefusesBoundsOutsideTheDtype) {
  Tensor bytes = zeros({3}, {.dtype = uint8});
  EXPECT_THROW(random_(bytes, 5, 3), RuntimeError);
  EXPECT_THROW(random_(bytes, 0, 300), RuntimeError);
  EXPECT_THROW(random_(bytes, -1, 3), RuntimeError);
  Tensor flags = zeros({100}, {.dtype = bool_});
  EXPECT_THROW(random_(flags, 0, 3), RuntimeError);
  EXPECT_EQ(distinct(random_(flags)), (std::set<double>{0, 1}));
  Tensor z = zeros({3}, {.dtype = complex64});
  EXPECT_THROW(random_(z), TypeError);
}

TEST(TensorMethods, DimOrderAsTorch) {
  EXPECT_EQ(empty({2, 3, 5, 7}).dim_order(true), (Dims{0, 1, 2, 3}));
  EXPECT_EQ(empty({2, 3, 5, 7}).transpose(1, 2).dim_order(true), (Dims{0, 2, 1, 3}));
  EXPECT_EQ(empty({2, 5, 7, 3}).permute({0, 3, 1, 2}).dim_order(true), (Dims{0, 2, 3, 1}));  // channels last
  EXPECT_EQ(empty({4, 3}).t().dim_order(), (Dims{1, 0}));
  EXPECT_EQ(empty({3, 4}).slice(1, {}, {}, 2).dim_order(true), (Dims{0, 1}));
  EXPECT_EQ(empty({2, 3, 4}).permute({1, 2, 0}).dim_order(true), (Dims{2, 0, 1}));
  EXPECT_EQ(empty({5}).dim_order(true), (Dims{0}));
  EXPECT_EQ(empty({}).dim_order(true), Dims{});
  // several orders fit a size-1 dim or a broadcast one: torch's choice, or a refusal when asked
  EXPECT_EQ(empty({3, 1, 4}).permute({2, 0, 1}).dim_order(), (Dims{1, 2, 0}));
  EXPECT_EQ(empty({3, 1}).expand({3, 4}).dim_order(), (Dims{0, 1}));
  EXPECT_EQ(empty({2, 2, 2}).slice(1, 0, 1).permute({2, 1, 0}).dim_order(), (Dims{2, 1, 0}));
  EXPECT_THROW(empty({1, 2, 3, 4}).dim_order(true), RuntimeError);
  EXPECT_THROW(empty({3, 1}).expand({3, 4}).dim_order(true), RuntimeError);
}

TEST(TensorMethods, BufferMarkIsTheTensorsOwn) {
  const Tensor t = zeros({2});
  EXPECT_FALSE(t.impl().buffer_mark().has_value());
  t.impl().set_buffer_mark(false);
  const Tensor same = t;  // another handle to the same tensor sees the mark
  EXPECT_EQ(same.impl().buffer_mark(), std::optional<bool>(false));
  EXPECT_FALSE(t.detach().impl().buffer_mark().has_value());  // a new tensor over the same data is not marked
  t.impl().set_buffer_mark(true);
  EXPECT_EQ(same.impl().buffer_mark(), std::optional<bool>(true));
}

TEST(Elementwise, SixteenBitTensorsReadANumberAsTorchs) {
  // mul and div read it in float32; add, and add's alpha, round it to the tensor's dtype first
  Tensor x = full({2}, 3.0, {.dtype = bfloat16});
  EXPECT_EQ(test::values(x * 1.0123), std::vector<double>({3.03125, 3.03125}));  // 3 * 1.015625 gives 3.046875
  EXPECT_EQ(test::values(x.mul(1.0123)), test::values(x * 1.0123));
  Tensor y = x.clone();
  y.mul_(1.0123);
  EXPECT_EQ(test::values(y), test::values(x * 1.0123));
  EXPECT_EQ(test::values(add(x, x, 0.30001)), std::vector<double>({3.90625, 3.90625}));  // 3 + 3 * 0.30078125
  Tensor z = x.clone();
  add_(z, x, 0.30001);
  EXPECT_EQ(test::values(z), test::values(add(x, x, 0.30001)));
  EXPECT_EQ(test::values(lerp(x, full({2}, 7.0, {.dtype = bfloat16}), 1.0)), std::vector<double>({7, 7}));
}

}  // namespace
}  // namespace ug
