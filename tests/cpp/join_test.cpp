// Joining and padding: cat/stack and their h/v/d forms (dtype promotion, torch's legacy
// empty tensors, strided inputs) and pad in all four modes, with the errors they raise.
#include <gtest/gtest.h>

#include <vector>

#include "ug/ops/join.h"
#include "test_util.h"

namespace {

using ug::Tensor;
using ug::test::expect_tensor;
using ug::test::shape;
using ug::test::values;

Tensor m22() { return ug::tensor({{1.0, 2.0}, {3.0, 4.0}}); }

// ---- cat ----------------------------------------------------------------------------------------

TEST(JoinCat, AlongEachDim) {
  Tensor a = ug::tensor({{1, 2}}), b = ug::tensor({{3, 4}, {5, 6}});
  expect_tensor(ug::cat({a, b}), {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_tensor(ug::cat({b, ug::tensor({{7}, {8}})}, -1), {2, 3}, {3, 4, 7, 5, 6, 8});
  expect_tensor(ug::concat({b.t(), b.t()}, 1), {2, 4}, {3, 5, 3, 5, 4, 6, 4, 6});
  Tensor single = ug::cat({a});
  EXPECT_FALSE(single.shares_storage(a));
  expect_tensor(ug::cat({ug::zeros({0, 2}), a}), {1, 2}, {1, 2});
}

TEST(JoinCat, PromotesDtypes) {
  Tensor ints = ug::tensor({1, 2}), floats = ug::tensor({0.5});
  Tensor out = ug::cat({ints, floats});
  EXPECT_EQ(out.dtype(), ug::float32);
  expect_tensor(out, {3}, {1, 2, 0.5});
  EXPECT_EQ(ug::cat({ug::tensor({true}), ug::tensor({3}, {.dtype = ug::int32})}).dtype(), ug::int32);
  EXPECT_EQ(ug::cat({ug::ones({1}, {.dtype = ug::float16}), ug::ones({1}, {.dtype = ug::bfloat16})}).dtype(),
            ug::float32);
}

TEST(JoinCat, LegacyEmptyTensorsAreSkipped) {
  Tensor m = ug::tensor({{1, 2}, {3, 4}});
  expect_tensor(ug::cat({m, ug::empty({0}, {.dtype = ug::int64})}, 1), {2, 2}, {1, 2, 3, 4});
  expect_tensor(ug::cat({ug::empty({0}), m}), {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(ug::cat({ug::empty({0}), m}).dtype(), ug::float32);  // every input counts for the dtype
  EXPECT_EQ(ug::cat({ug::empty({0}), ug::empty({0})}).shape(), shape({0}));
}

TEST(JoinCat, Errors) {
  EXPECT_THROW(ug::cat({}), ug::ValueError);
  EXPECT_THROW(ug::cat({ug::scalar_tensor(1.0), ug::scalar_tensor(2.0)}), ug::ValueError);
  EXPECT_THROW(ug::cat({ug::zeros({2, 2}), ug::zeros({2, 3})}), ug::ValueError);
  EXPECT_THROW(ug::cat({ug::zeros({2, 2}), ug::zeros({2})}), ug::ValueError);
  EXPECT_THROW(ug::cat({ug::zeros({2, 2}), ug::zeros({2, 2})}, 2), ug::IndexError);
}

// ---- stack and friends ----------------------------------------------------------------------------

TEST(JoinStack, NewDim) {
  Tensor a = ug::tensor({1, 2}), b = ug::tensor({3, 4});
  expect_tensor(ug::stack({a, b}), {2, 2}, {1, 2, 3, 4});
  expect_tensor(ug::stack({a, b}, -1), {2, 2}, {1, 3, 2, 4});
  expect_tensor(ug::stack({ug::scalar_tensor(1.0), ug::scalar_tensor(2.0)}), {2}, {1, 2});
  EXPECT_EQ(ug::stack({ug::zeros({0}), ug::zeros({0})}).shape(), shape({2, 0}));
  EXPECT_THROW(ug::stack({a, ug::tensor({1, 2, 3})}), ug::ValueError);
  EXPECT_THROW(ug::stack({a, b}, 3), ug::IndexError);
  EXPECT_THROW(ug::stack({}), ug::ValueError);
}

TEST(JoinStack, HorizontalVerticalDepth) {
  Tensor a = ug::tensor({1, 2}), b = ug::tensor({3, 4});
  expect_tensor(ug::hstack({a, ug::tensor({5})}), {3}, {1, 2, 5});
  expect_tensor(ug::hstack({ug::tensor({{1}, {2}}), ug::tensor({{3}, {4}})}), {2, 2}, {1, 3, 2, 4});
  expect_tensor(ug::vstack({a, b}), {2, 2}, {1, 2, 3, 4});
  expect_tensor(ug::vstack({ug::scalar_tensor(1), ug::scalar_tensor(2)}), {2, 1}, {1, 2});
  expect_tensor(ug::dstack({a, b}), {1, 2, 2}, {1, 3, 2, 4});
  EXPECT_EQ(ug::atleast_3d(ug::zeros({2, 3})).shape(), shape({2, 3, 1}));
}

// ---- pad ------------------------------------------------------------------------------------------

TEST(JoinPad, ConstantPadsAndCrops) {
  Tensor x = m22();
  expect_tensor(ug::pad(x, {1, 1}), {2, 4}, {0, 1, 2, 0, 0, 3, 4, 0});
  expect_tensor(ug::pad(x, {1, 0, 0, 1}, "constant", 9), {3, 3}, {9, 1, 2, 9, 3, 4, 9, 9, 9});
  expect_tensor(ug::pad(x, {-1, 1}), {2, 2}, {2, 0, 4, 0});
  expect_tensor(ug::pad(x, {0, 0, -1, 0}), {1, 2}, {3, 4});
  expect_tensor(ug::pad(x, {-2, 1}), {2, 1}, {0, 0});
  EXPECT_EQ(ug::pad(ug::zeros({0, 2}), {1, 1}).shape(), shape({0, 4}));
  expect_tensor(ug::pad(ug::tensor({1, 2}, {.dtype = ug::int32}), {1, 0}, "constant", 7), {3}, {7, 1, 2});
  Tensor same = ug::pad(x, {0, 0});
  EXPECT_FALSE(same.shares_storage(x));
  expect_tensor(same, {2, 2}, {1, 2, 3, 4});
}

TEST(JoinPad, ReflectReplicateCircular) {
  Tensor r = ug::tensor({{0.0, 1.0, 2.0, 3.0}});
  expect_tensor(ug::pad(r, {2, 1}, "reflect"), {1, 7}, {2, 1, 0, 1, 2, 3, 2});
  expect_tensor(ug::pad(r, {2, 1}, "replicate"), {1, 7}, {0, 0, 0, 1, 2, 3, 3});
  expect_tensor(ug::pad(r, {2, 1}, "circular"), {1, 7}, {2, 3, 0, 1, 2, 3, 0});
  expect_tensor(ug::pad(r, {-1, 2}, "reflect"), {1, 5}, {1, 2, 3, 2, 1});
  expect_tensor(ug::pad(r, {4, 0}, "circular"), {1, 8}, {0, 1, 2, 3, 0, 1, 2, 3});

  Tensor m = ug::arange(9, {.dtype = ug::float32}).reshape({1, 3, 3});
  expect_tensor(ug::pad(m, {1, 1, 1, 1}, "reflect"), {1, 5, 5},
                {4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4, 7, 6, 7, 8, 7, 4, 3, 4, 5, 4});
  expect_tensor(ug::pad(m.transpose(1, 2), {1, 0, 0, 1}, "replicate"), {1, 4, 4},
                {0, 0, 3, 6, 1, 1, 4, 7, 2, 2, 5, 8, 2, 2, 5, 8});
}

TEST(JoinPad, Errors) {
  Tensor x = m22();
  EXPECT_THROW(ug::pad(x, {1}), ug::ValueError);
  EXPECT_THROW(ug::pad(x, {1, 1, 1, 1, 1, 1}), ug::ValueError);
  EXPECT_THROW(ug::pad(x, {-2, -1}), ug::ValueError);
  EXPECT_THROW(ug::pad(x, {1, 1}, "wrap"), ug::ValueError);
  EXPECT_THROW(ug::pad(x, {2, 0}, "reflect"), ug::ValueError);
  EXPECT_THROW(ug::pad(x, {3, 0}, "circular"), ug::ValueError);
  EXPECT_THROW(ug::pad(x, {1, 0}, "reflect", 1.0), ug::ValueError);
  EXPECT_THROW(ug::pad(ug::zeros({2, 0}), {1, 0}, "replicate"), ug::ValueError);
}

}  // namespace
