// Indexing: basic indices as views, tensor/mask/bool indices (NumPy's placement rule),
// assignment through an index, gather/scatter/index_select, masks, flip/roll/repeat/tile,
// with exact values on small inputs, empty and 0-d tensors, and the errors they raise.
#include <gtest/gtest.h>

#include <vector>

#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "test_util.h"

namespace {

using ug::Ellipsis;
using ug::None;
using ug::Slice;
using ug::Tensor;
using ug::test::expect_tensor;
using ug::test::shape;
using ug::test::values;

Tensor i64(const ug::NestedList& v) { return ug::tensor(v, {.dtype = ug::int64}); }
Tensor x234() { return ug::arange(24).reshape({2, 3, 4}); }
Tensor x34() { return ug::arange(12).reshape({3, 4}); }

// ---- basic indexing: views ------------------------------------------------------------------

TEST(IndexBasic, IntsSlicesAndStepsAreViews) {
  Tensor x = x234();
  Tensor row = x.index({1});
  expect_tensor(row, {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  EXPECT_TRUE(row.shares_storage(x));
  Tensor stepped = x.index({Slice{}, Slice{1, {}}, Slice{{}, {}, 3}});
  expect_tensor(stepped, {2, 2, 2}, {4, 7, 8, 11, 16, 19, 20, 23});
  EXPECT_TRUE(stepped.shares_storage(x));
  expect_tensor(x.index({-1, Slice{0, {}, 2}, -1}), {2}, {15, 23});
  expect_tensor(x.index({0, Slice{-2, {}}, Slice{{}, -2}}), {2, 2}, {4, 5, 8, 9});
  expect_tensor(x.index({0, Slice{5, 10}}), {0, 4}, {});
}

TEST(IndexBasic, NoneEllipsisAndBool) {
  Tensor x = x234();
  expect_tensor(x.index({Ellipsis, 1}), {2, 3}, {1, 5, 9, 13, 17, 21});
  EXPECT_EQ(x.index({None, 0, None}).shape(), shape({1, 1, 3, 4}));
  EXPECT_EQ(x.index({0, Ellipsis, None}).shape(), shape({3, 4, 1}));
  EXPECT_EQ(x.index({Ellipsis}).shape(), shape({2, 3, 4}));
  EXPECT_EQ(x.index({true}).shape(), shape({1, 2, 3, 4}));
  EXPECT_EQ(x.index({false}).shape(), shape({0, 2, 3, 4}));
  EXPECT_EQ(x.index({1, true, 2}).shape(), shape({1, 4}));
}

TEST(IndexBasic, WritesThroughTheView) {
  Tensor x = x34();
  x.index({1, Slice{{}, {}, 2}}).fill_(-1);
  expect_tensor(x.index({1}), {4}, {-1, 5, -1, 7});
}

TEST(IndexBasic, ZeroDim) {
  Tensor s = ug::scalar_tensor(5.0);
  expect_tensor(s.index({}), {}, {5});
  expect_tensor(s.index({Ellipsis}), {}, {5});
  expect_tensor(s.index({None}), {1}, {5});
  expect_tensor(s.index({true}), {1}, {5});
  EXPECT_EQ(s.index({false}).shape(), shape({0}));
  EXPECT_THROW(s.index({0}), ug::IndexError);
}

TEST(IndexBasic, Errors) {
  Tensor x = x234();
  EXPECT_THROW(x.index({2}), ug::IndexError);
  EXPECT_THROW(x.index({0, -4}), ug::IndexError);
  EXPECT_THROW(x.index({0, 0, 0, 0}), ug::IndexError);
  EXPECT_THROW(x.index({Ellipsis, 0, Ellipsis}), ug::IndexError);
  EXPECT_THROW(x.index({Slice{0, 2, 0}}), ug::ValueError);
  EXPECT_THROW(x.index({Slice{0, 2, -1}}), ug::ValueError);
}

// ---- advanced indexing: copies ----------------------------------------------------------------

TEST(IndexAdvanced, OneAndSeveralIndexTensors) {
  Tensor x = x34();
  Tensor rows = x.index({i64({2, 0, -1})});
  expect_tensor(rows, {3, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  EXPECT_FALSE(rows.shares_storage(x));
  expect_tensor(x.index({i64({0, 2}), i64({1, 3})}), {2}, {1, 11});
  expect_tensor(x.index({i64({{0}, {2}}), i64({1, 3})}), {2, 2}, {1, 3, 9, 11});
  expect_tensor(x.index({ug::tensor({2, 1}, {.dtype = ug::int32})}), {2, 4}, {8, 9, 10, 11, 4, 5, 6, 7});
  expect_tensor(x.index({i64({{1, 2}})}), {1, 2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
}

TEST(IndexAdvanced, MixedWithBasicIndices) {
  Tensor x = x234();
  // Adjacent index tensors keep their place.
  expect_tensor(x.index({Slice{}, i64({2, 0})}), {2, 2, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15});
  expect_tensor(x.index({0, Slice{}, i64({1, 2})}), {3, 2}, {1, 2, 5, 6, 9, 10});
  expect_tensor(x.index({i64({1}), 0, i64({2})}), {1}, {14});
  expect_tensor(x.index({Ellipsis, i64({3, 0})}), {2, 3, 2}, {3, 0, 7, 4, 11, 8, 15, 12, 19, 16, 23, 20});
  // Separated by a slice (or by None), the index dims go first.
  expect_tensor(x.index({i64({1, 0}), Slice{}, i64({3, 1})}), {2, 3}, {15, 19, 23, 1, 5, 9});
  expect_tensor(x34().index({i64({0, 1}), None, i64({0, 1})}), {2, 1}, {0, 5});
  // A strided input.
  expect_tensor(x34().t().index({i64({1, 3})}), {2, 3}, {1, 5, 9, 3, 7, 11});
  expect_tensor(x.index({Slice{}, Slice{{}, {}, 2}, i64({1})}), {2, 2, 1}, {1, 9, 13, 21});
}

TEST(IndexAdvanced, Masks) {
  Tensor x = x34();
  expect_tensor(x.index({x.gt(5)}), {6}, {6, 7, 8, 9, 10, 11});
  Tensor cols = ug::tensor({true, false, true, false});
  expect_tensor(x.index({Slice{}, cols}), {3, 2}, {0, 2, 4, 6, 8, 10});
  expect_tensor(x.index({Slice{}, cols.to(ug::uint8)}), {3, 2}, {0, 2, 4, 6, 8, 10});
  expect_tensor(x234().index({x234().index({Ellipsis, 0}).gt(10)}), {3, 4},
                {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  expect_tensor(x.index({x.gt(100)}), {0}, {});
  EXPECT_EQ(x.index({ug::scalar_tensor(true)}).shape(), shape({1, 3, 4}));
  EXPECT_EQ(x.index({ug::scalar_tensor(false)}).shape(), shape({0, 3, 4}));
  EXPECT_THROW(x.index({ug::tensor({true, false})}), ug::IndexError);
  EXPECT_THROW(x.index({ug::zeros({3, 4, 1}, {.dtype = ug::bool_})}), ug::IndexError);
}

TEST(IndexAdvanced, ZeroDimIndexTensorActsAsInt) {
  Tensor x = x34();
  Tensor r = x.index({ug::scalar_tensor(1, {.dtype = ug::int64})});
  expect_tensor(r, {4}, {4, 5, 6, 7});
  EXPECT_TRUE(r.shares_storage(x));
}

TEST(IndexAdvanced, EmptyIndicesAndEmptyTensors) {
  Tensor x = x34();
  EXPECT_EQ(x.index({ug::empty({0}, {.dtype = ug::int64})}).shape(), shape({0, 4}));
  EXPECT_EQ(x.index({Slice{}, ug::empty({2, 0}, {.dtype = ug::int64})}).shape(), shape({3, 2, 0}));
  Tensor e = ug::zeros({0, 3});
  EXPECT_EQ(e.index({Slice{}, i64({1, 2})}).shape(), shape({0, 2}));
  EXPECT_THROW(e.index({i64({0})}), ug::IndexError);
}

TEST(IndexAdvanced, Errors) {
  Tensor x = x34();
  EXPECT_THROW(x.index({i64({3})}), ug::IndexError);
  EXPECT_THROW(x.index({i64({-4})}), ug::IndexError);
  EXPECT_THROW(x.index({Slice{}, i64({0, 4})}), ug::IndexError);
  EXPECT_THROW(x.index({ug::tensor({0.0})}), ug::IndexError);
  EXPECT_THROW(x.index({i64({0, 1}), i64({0, 1, 2})}), ug::IndexError);
  EXPECT_THROW(x.index({i64({0}), i64({0}), i64({0})}), ug::IndexError);
}

// ---- assignment ---------------------------------------------------------------------------------

TEST(IndexPut, BasicIndicesWriteThroughViews) {
  Tensor x = x34();
  const uint32_t version = x.storage()->version();
  x.index_put_({0}, i64({9, 8, 7, 6}));
  EXPECT_GT(x.storage()->version(), version);
  x.index_put_({Slice{}, -1}, 0);
  x.index_put_({2}, ug::ones({1, 1, 4}, {.dtype = ug::int64}));  // leading 1s are dropped
  x.index_put_({1, Slice{1, 3}}, 2.7);                           // converted to int64
  expect_tensor(x, {3, 4}, {9, 8, 7, 0, 4, 2, 2, 0, 1, 1, 1, 1});
  EXPECT_THROW(x.index_put_({0}, i64({1, 2, 3})), ug::ValueError);
  EXPECT_THROW(x.index_put_({5}, 1), ug::IndexError);
}

TEST(IndexPut, TensorIndicesScatter) {
  Tensor x = x34();
  const uint32_t version = x.storage()->version();
  x.index_put_({i64({0, 2}), i64({1, -1})}, i64({-1, -2}));
  EXPECT_GT(x.storage()->version(), version);
  expect_tensor(x, {3, 4}, {0, -1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -2});
  x.index_put_({x.gt(8)}, 0);
  expect_tensor(x, {3, 4}, {0, -1, 2, 3, 4, 5, 6, 7, 8, 0, 0, -2});
  x.index_put_({Slice{}, i64({0})}, i64({{7}, {8}, {9}}));
  expect_tensor(x.index({Slice{}, 0}), {3}, {7, 8, 9});
  EXPECT_THROW(x.index_put_({i64({3})}, 1), ug::IndexError);
  EXPECT_THROW(x.index_put_({i64({0, 1})}, i64({1, 2, 3})), ug::ValueError);
}

TEST(IndexPut, MaskWithOneValue) {
  Tensor x = x34();
  x.index_put_({x.gt(8)}, 0);
  expect_tensor(x, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0});
  x.index_put_({ug::tensor({true, false, true})}, ug::full({1, 1}, 7.9));
  expect_tensor(x, {3, 4}, {7, 7, 7, 7, 4, 5, 6, 7, 7, 7, 7, 7});
  x.index_put_({ug::tensor({0, 1, 0}, {.dtype = ug::uint8})}, -1);
  expect_tensor(x.index({1}), {4}, {-1, -1, -1, -1});
  Tensor t = x.t();  // a strided target
  t.index_put_({ug::tensor({false, false, false, true})}, 3);
  expect_tensor(x.index({Slice{}, 3}), {3}, {3, 3, 3});
  EXPECT_THROW(x.index_put_({ug::tensor({true, false})}, 1), ug::IndexError);
}

TEST(IndexPut, SeparatedIndicesAndStridedTarget) {
  Tensor x = ug::zeros({2, 3, 4});
  Tensor v = ug::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  x.index_put_({i64({1, 0}), Slice{}, i64({3, 1})}, v);
  expect_tensor(x.index({1, Slice{}, 3}), {3}, {1, 2, 3});
  expect_tensor(x.index({0, Slice{}, 1}), {3}, {4, 5, 6});
  EXPECT_EQ(values(x.sum()), std::vector<double>{21});

  Tensor z = ug::zeros({4, 3});
  Tensor zt = z.t();
  zt.index_put_({Slice{}, i64({1, 3})}, 5.0);
  expect_tensor(z, {4, 3}, {0, 0, 0, 5, 5, 5, 0, 0, 0, 5, 5, 5});
}

TEST(IndexPut, OverlappingValueIsReadBeforeWriting) {
  Tensor x = ug::arange(5);
  x.index_put_({i64({1, 2, 3, 4})}, x.index({Slice{0, 4}}));
  expect_tensor(x, {5}, {0, 0, 1, 2, 3});
}

// ---- gather / scatter / index_select -----------------------------------------------------------

TEST(IndexGather, ValuesAlongEachDim) {
  Tensor t = i64({{1, 2}, {3, 4}});
  expect_tensor(t.gather(1, i64({{0, 0}, {1, 0}})), {2, 2}, {1, 1, 4, 3});
  expect_tensor(ug::gather(t, 0, i64({{1, 0}})), {1, 2}, {3, 2});
  expect_tensor(t.t().gather(-1, i64({{1}, {0}})), {2, 1}, {3, 2});
  expect_tensor(ug::scalar_tensor(5.0).gather(0, i64({0})), {1}, {5});
  EXPECT_EQ(t.gather(1, ug::empty({2, 0}, {.dtype = ug::int64})).shape(), shape({2, 0}));
}

TEST(IndexGather, Errors) {
  Tensor t = i64({{1, 2}, {3, 4}});
  EXPECT_THROW(t.gather(1, ug::tensor({{0}}, {.dtype = ug::int32})), ug::TypeError);
  EXPECT_THROW(t.gather(1, i64({{2}})), ug::IndexError);
  EXPECT_THROW(t.gather(1, i64({{-1}})), ug::IndexError);
  EXPECT_THROW(t.gather(1, i64({0})), ug::ValueError);
  EXPECT_THROW(t.gather(1, i64({{0}, {0}, {0}})), ug::ValueError);
  EXPECT_THROW(t.gather(2, i64({{0}})), ug::IndexError);
}

TEST(IndexScatter, ScatterAndScatterAdd) {
  Tensor src = ug::arange(1, 11, 1, {.dtype = ug::float32}).reshape({2, 5});
  Tensor zeros = ug::zeros({3, 5});
  expect_tensor(zeros.scatter(0, i64({{0, 1, 2, 0}}), src), {3, 5}, {1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0});
  expect_tensor(zeros, {3, 5}, std::vector<double>(15, 0.0));  // the input is untouched
  expect_tensor(ug::scatter_add(zeros, 0, i64({{0, 1, 2, 0, 0}, {2, 0, 0, 1, 2}}), ug::ones({2, 5})), {3, 5},
                {1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1});
  expect_tensor(ug::scatter(ug::zeros({2, 3}), 1, i64({{2}, {0}}), 7.5), {2, 3}, {0, 0, 7.5, 7.5, 0, 0});
  expect_tensor(ug::zeros({3}).scatter_add(0, i64({1, 1, 1}), ug::ones({3})), {3}, {0, 3, 0});
}

TEST(IndexScatter, Errors) {
  Tensor x = ug::zeros({2, 3});
  EXPECT_THROW(x.scatter(0, i64({{0}}), ug::ones({1, 1}, {.dtype = ug::float64})), ug::TypeError);
  EXPECT_THROW(x.scatter(0, i64({{2}}), ug::ones({1, 1})), ug::IndexError);
  EXPECT_THROW(x.scatter(0, i64({{0, 0}}), ug::ones({1, 1})), ug::ValueError);
  EXPECT_THROW(x.scatter(1, i64({{0}, {0}, {0}}), ug::ones({3, 1})), ug::ValueError);
  EXPECT_THROW(x.scatter(0, i64({0}), ug::ones({1})), ug::ValueError);
}

TEST(IndexSelect, ValuesDtypesAndErrors) {
  Tensor x = x34();
  expect_tensor(x.index_select(1, i64({3, 0})), {3, 2}, {3, 0, 7, 4, 11, 8});
  expect_tensor(ug::index_select(x, 0, ug::tensor({2}, {.dtype = ug::int32})), {1, 4}, {8, 9, 10, 11});
  expect_tensor(x.t().index_select(0, i64({1, 1})), {2, 3}, {1, 5, 9, 1, 5, 9});
  expect_tensor(x.index_select(0, ug::scalar_tensor(1, {.dtype = ug::int64})), {1, 4}, {4, 5, 6, 7});
  expect_tensor(ug::scalar_tensor(3.0).index_select(0, i64({0})), {}, {3});
  EXPECT_EQ(x.index_select(0, ug::empty({0}, {.dtype = ug::int64})).shape(), shape({0, 4}));
  EXPECT_THROW(x.index_select(0, i64({3})), ug::IndexError);
  EXPECT_THROW(x.index_select(0, i64({-1})), ug::IndexError);
  EXPECT_THROW(x.index_select(0, i64({{0}})), ug::ValueError);
  EXPECT_THROW(x.index_select(0, ug::tensor({0.0})), ug::TypeError);
  EXPECT_THROW(x.index_select(2, i64({0})), ug::IndexError);
}

TEST(IndexTake, FlatPositions) {
  Tensor x = i64({{4, 3, 5}, {6, 7, 8}});
  expect_tensor(ug::take(x, i64({0, 2, 5})), {3}, {4, 5, 8});
  expect_tensor(ug::take(x.t(), i64({{1, -1}})), {1, 2}, {6, 8});
  EXPECT_THROW(ug::take(x, i64({6})), ug::IndexError);
}

// ---- masks --------------------------------------------------------------------------------------

TEST(IndexMask, MaskedFillAndSelect) {
  Tensor x = ug::tensor({{1.0, 2.0}, {3.0, 4.0}});
  expect_tensor(x.masked_fill(x.gt(2), -1), {2, 2}, {1, 2, -1, -1});
  expect_tensor(ug::masked_fill(x, ug::tensor({true, false}), 0), {2, 2}, {0, 2, 0, 4});
  EXPECT_EQ(x.masked_fill(x.gt(2), 1).dtype(), ug::float32);
  expect_tensor(x34().masked_fill(x34().lt(2), 2.9), {3, 4}, {2, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  expect_tensor(x.masked_select(x.gt(1.5)), {3}, {2, 3, 4});
  expect_tensor(ug::masked_select(x, ug::tensor({false, true})), {2}, {2, 4});
  expect_tensor(x.masked_select(x.gt(9)), {0}, {});

  Tensor y = x.clone();
  const uint32_t version = y.storage()->version();
  y.masked_fill_(ug::tensor({{true}, {false}}), 9);
  EXPECT_GT(y.storage()->version(), version);
  expect_tensor(y, {2, 2}, {9, 9, 3, 4});
}

TEST(IndexMask, Errors) {
  Tensor x = ug::zeros({2, 2});
  EXPECT_THROW(x.masked_fill(ug::ones({2, 2}, {.dtype = ug::uint8}), 1), ug::TypeError);
  EXPECT_THROW(x.masked_fill(ug::ones({3}, {.dtype = ug::bool_}), 1), ug::ValueError);
  EXPECT_THROW(x.masked_fill_(ug::ones({2, 2, 2}, {.dtype = ug::bool_}), 1), ug::ValueError);
  EXPECT_THROW(x.masked_select(ug::ones({2, 2})), ug::TypeError);
}

TEST(IndexNonzero, CoordinatesWhereAndCount) {
  Tensor x = i64({{0, 1}, {2, 0}});
  expect_tensor(x.nonzero(), {2, 2}, {0, 1, 1, 0});
  expect_tensor(ug::argwhere(ug::tensor({0.0, 1.5, 0.0, -2.0})), {2, 1}, {1, 3});
  std::vector<Tensor> coords = ug::where(x);
  ASSERT_EQ(coords.size(), 2u);
  expect_tensor(coords[0], {2}, {0, 1});
  expect_tensor(coords[1], {2}, {1, 0});
  expect_tensor(ug::count_nonzero(x), {}, {2});
  EXPECT_EQ(ug::scalar_tensor(3).nonzero().shape(), shape({1, 0}));
  EXPECT_EQ(ug::scalar_tensor(0).nonzero().shape(), shape({0, 0}));
  EXPECT_EQ(ug::zeros({0, 3}).nonzero().shape(), shape({0, 2}));
  EXPECT_EQ(ug::nonzero(ug::zeros({2, 3})).dtype(), ug::int64);
}

// ---- flip / roll / repeat / tile ----------------------------------------------------------------

TEST(IndexFlip, DimsAndCopies) {
  Tensor x = ug::arange(6).reshape({2, 3});
  expect_tensor(x.flip({0, 1}), {2, 3}, {5, 4, 3, 2, 1, 0});
  expect_tensor(x.flip({-1}), {2, 3}, {2, 1, 0, 5, 4, 3});
  expect_tensor(ug::flipud(x), {2, 3}, {3, 4, 5, 0, 1, 2});
  expect_tensor(ug::fliplr(x.t()), {3, 2}, {3, 0, 4, 1, 5, 2});
  Tensor same = x.flip({});
  EXPECT_FALSE(same.shares_storage(x));
  expect_tensor(same, {2, 3}, {0, 1, 2, 3, 4, 5});
  expect_tensor(ug::scalar_tensor(2.0).flip({0}), {}, {2});
  EXPECT_THROW(x.flip({1, -1}), ug::ValueError);
  EXPECT_THROW(x.flip({2}), ug::IndexError);
  EXPECT_THROW(ug::fliplr(ug::arange(3)), ug::ValueError);
}

TEST(IndexRoll, FlatAndPerDim) {
  Tensor x = ug::arange(1, 9).reshape({4, 2});
  expect_tensor(x.roll({1}), {4, 2}, {8, 1, 2, 3, 4, 5, 6, 7});
  expect_tensor(x.roll({1}, {0}), {4, 2}, {7, 8, 1, 2, 3, 4, 5, 6});
  expect_tensor(ug::roll(x, {-1}, {0}), {4, 2}, {3, 4, 5, 6, 7, 8, 1, 2});
  expect_tensor(x.roll({2, 1}, {0, 1}), {4, 2}, {6, 5, 8, 7, 2, 1, 4, 3});
  expect_tensor(x.roll({9}, {-2}), {4, 2}, {7, 8, 1, 2, 3, 4, 5, 6});
  Tensor same = x.roll({4}, {0});
  EXPECT_FALSE(same.shares_storage(x));
  expect_tensor(ug::scalar_tensor(1.0).roll({3}), {}, {1});
  EXPECT_EQ(ug::zeros({0, 2}).roll({1}, {0}).shape(), shape({0, 2}));
  EXPECT_THROW(x.roll({1, 2}), ug::ValueError);
  EXPECT_THROW(x.roll({1}, {0, 1}), ug::ValueError);
  EXPECT_THROW(x.roll({1}, {2}), ug::IndexError);
}

TEST(IndexRepeat, RepeatTileAndInterleave) {
  Tensor x = i64({1, 2, 3});
  expect_tensor(x.repeat({2, 2}), {2, 6}, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3});
  EXPECT_EQ(x.repeat({4, 2, 1}).shape(), shape({4, 2, 3}));
  EXPECT_EQ(x.repeat({0}).shape(), shape({0}));
  Tensor once = x.repeat({1});
  EXPECT_FALSE(once.shares_storage(x));
  expect_tensor(ug::scalar_tensor(7).repeat({2}), {2}, {7, 7});
  EXPECT_THROW(x34().repeat({2}), ug::ValueError);
  EXPECT_THROW(x.repeat({-1}), ug::ValueError);

  Tensor y = i64({{1, 2}, {3, 4}});
  expect_tensor(x.tile({2}), {6}, {1, 2, 3, 1, 2, 3});
  expect_tensor(ug::tile(y, {2}), {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4});
  expect_tensor(y.tile({2, 1}), {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4});
  EXPECT_EQ(y.tile({2, 1, 1}).shape(), shape({2, 2, 2}));
  expect_tensor(y.t().tile({1, 2}), {2, 4}, {1, 3, 1, 3, 2, 4, 2, 4});

  expect_tensor(ug::repeat_interleave(x, 2), {6}, {1, 1, 2, 2, 3, 3});
  expect_tensor(ug::repeat_interleave(y, 2, 1), {2, 4}, {1, 1, 2, 2, 3, 3, 4, 4});
  expect_tensor(ug::repeat_interleave(y, 2, 0), {4, 2}, {1, 2, 1, 2, 3, 4, 3, 4});
  expect_tensor(ug::repeat_interleave(y, 1), {4}, {1, 2, 3, 4});
}

}  // namespace
