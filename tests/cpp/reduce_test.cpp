// Reductions, scans and sorting: exact values on small inputs, dims and keepdim, empty and
// 0-d tensors, result dtypes, errors, and thread-count independence.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ug/core/thread_pool.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "test_util.h"

namespace {

using ug::Dims;
using ug::Tensor;

using ug::test::shape;
using ug::test::values;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  ug::test::expect_values(t, want, tol);
}

Tensor m23() { return ug::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}); }
Tensor arange3d() { return ug::arange(24, {.dtype = ug::float32}).reshape({2, 3, 4}); }

// ---- sum / mean / prod ----------------------------------------------------------------------

TEST(ReduceSum, FullAndPerDim) {
  Tensor x = m23();
  EXPECT_EQ(x.sum().dim(), 0);
  expect_values(x.sum(), {21});
  expect_values(x.sum({0}), {5, 7, 9});
  expect_values(x.sum({1}), {6, 15});
  expect_values(x.sum({-1}), {6, 15});
  EXPECT_EQ(x.sum({1}, true).shape(), shape({2, 1}));
  expect_values(x.sum({0, 1}), {21});
  EXPECT_EQ(x.sum(Dims{}).dim(), 0);  // an empty list means every dim
  expect_values(ug::sum(x, {1}), {6, 15});
}

TEST(ReduceSum, NonAdjacentDimsAndStridedInput) {
  Tensor x = arange3d();
  // Element [i, j, k] is 12i + 4j + k.
  std::vector<double> want;
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) s += 12 * i + 4 * j + k;
    want.push_back(s);
  }
  expect_values(x.sum({0, 2}), want);
  expect_values(x.sum({2, 0}, true), want);
  EXPECT_EQ(x.sum({0, 2}, true).shape(), shape({1, 3, 1}));
  Tensor t = x.transpose(0, 2);  // [4, 3, 2], non-contiguous
  expect_values(t.sum({2, 0}), want);
  expect_values(x.sum({1}), values(t.sum({1}).t()));
}

TEST(ReduceSum, Dtypes) {
  Tensor i = ug::tensor({1, 2, 3}, {.dtype = ug::int32});
  EXPECT_EQ(i.sum().dtype(), ug::int64);
  EXPECT_EQ(i.sum().item<int64_t>(), 6);
  Tensor b = ug::tensor({true, false, true});
  EXPECT_EQ(b.sum().dtype(), ug::int64);
  EXPECT_EQ(b.sum().item<int64_t>(), 2);
  EXPECT_EQ(m23().sum(ug::float64).dtype(), ug::float64);
  EXPECT_EQ(i.sum({0}, false, ug::float32).dtype(), ug::float32);
  Tensor h = ug::tensor({1.5, 2.5, 3.0}, {.dtype = ug::float16});
  EXPECT_EQ(h.sum().dtype(), ug::float16);
  expect_values(h.sum(), {7});
  expect_values(ug::tensor({1.0, 2.0}, {.dtype = ug::bfloat16}).mean(), {1.5});
}

TEST(ReduceSum, EmptyAndZeroDim) {
  Tensor e = ug::zeros({0, 3});
  expect_values(e.sum({0}), {0, 0, 0});
  EXPECT_EQ(e.sum({1}).shape(), shape({0}));
  expect_values(e.sum(), {0});
  expect_values(e.prod({0}), {1, 1, 1});
  expect_values(e.mean({0}), {kNaN, kNaN, kNaN});
  Tensor s = ug::scalar_tensor(5.0);
  expect_values(s.sum(), {5});
  expect_values(s.sum({0}), {5});
  EXPECT_EQ(s.sum({-1}, true).dim(), 0);
  EXPECT_THROW(s.sum({1}), ug::IndexError);
}

TEST(ReduceSum, BadDims) {
  Tensor x = m23();
  EXPECT_THROW(x.sum({2}), ug::IndexError);
  EXPECT_THROW(x.sum({-3}), ug::IndexError);
  EXPECT_THROW(x.sum({1, -1}), ug::ValueError);
}

TEST(ReduceSum, DeterministicAcrossThreadCounts) {
  const int64_t n = 1 << 20;
  Tensor x = ug::arange(n, {.dtype = ug::float32}).mul(0.37).sin().mul(1000.0);
  Tensor rows = x.reshape({64, n / 64});
  int before = ug::get_num_threads();
  ug::set_num_threads(1);
  float full1 = x.sum().item<float>();
  std::vector<double> cols1 = values(rows.sum({0})), rows1 = values(rows.sum({1}));
  ug::set_num_threads(2);
  float full2 = x.sum().item<float>();
  std::vector<double> cols2 = values(rows.sum({0})), rows2 = values(rows.sum({1}));
  ug::set_num_threads(before);
  EXPECT_EQ(std::memcmp(&full1, &full2, sizeof(float)), 0);
  EXPECT_EQ(cols1, cols2);
  EXPECT_EQ(rows1, rows2);
}

TEST(ReduceMean, ValuesAndDtypes) {
  Tensor x = m23();
  expect_values(x.mean(), {3.5});
  expect_values(x.mean({0}), {2.5, 3.5, 4.5});
  expect_values(x.mean({-1}, true), {2, 5});
  Tensor i = ug::tensor({1, 2, 4});
  EXPECT_THROW(i.mean(), ug::TypeError);
  EXPECT_THROW(ug::tensor({true}).mean(), ug::TypeError);
  Tensor m = i.mean(ug::float64);
  EXPECT_EQ(m.dtype(), ug::float64);
  expect_values(m, {7.0 / 3});
}

TEST(ReduceProd, Values) {
  Tensor x = m23();
  expect_values(x.prod(), {720});
  expect_values(x.prod(0), {4, 10, 18});
  expect_values(x.prod(-1, true), {6, 120});
  EXPECT_EQ(x.prod(-1, true).shape(), shape({2, 1}));
  Tensor i = ug::tensor({2, 3}, {.dtype = ug::uint8});
  EXPECT_EQ(i.prod().dtype(), ug::int64);
  EXPECT_EQ(i.prod().item<int64_t>(), 6);
}

// ---- max / min / argmax ------------------------------------------------------------------------

TEST(ReduceMax, FullAndPerDim) {
  Tensor x = ug::tensor({{3.0, 7.0, 7.0}, {9.0, -1.0, 2.0}});
  expect_values(x.max(), {9});
  expect_values(x.min(), {-1});
  auto [v, i] = x.max(1);
  expect_values(v, {7, 9});
  EXPECT_EQ(i.dtype(), ug::int64);
  expect_values(i, {1, 0});  // ties: the first occurrence
  auto [mv, mi] = x.min(0, true);
  EXPECT_EQ(mv.shape(), shape({1, 3}));
  expect_values(mv, {3, -1, 2});
  expect_values(mi, {0, 1, 1});
  expect_values(x.amax({0, 1}), {9});
  expect_values(x.amin({-1}), {3, -1});
  expect_values(x.amax(), {9});
  EXPECT_EQ(x.amax({1}, true).shape(), shape({2, 1}));
}

TEST(ReduceMax, NaNPropagatesAndIsChosen) {
  Tensor x = ug::tensor({1.0, kNaN, 5.0});
  expect_values(x.max(), {kNaN});
  expect_values(x.min(), {kNaN});
  EXPECT_EQ(x.argmax().item<int64_t>(), 1);
  EXPECT_EQ(x.max(0).second.item<int64_t>(), 1);
}

TEST(ReduceMax, IntegerAndBool) {
  Tensor i = ug::tensor({3, -8, 5}, {.dtype = ug::int32});
  EXPECT_EQ(i.max().dtype(), ug::int32);
  EXPECT_EQ(i.max().item<int64_t>(), 5);
  EXPECT_EQ(i.min().item<int64_t>(), -8);
  Tensor b = ug::tensor({false, true});
  EXPECT_EQ(b.max().dtype(), ug::bool_);
  EXPECT_TRUE(b.max().item<bool>());
}

TEST(ReduceMax, EmptyIsAnError) {
  Tensor e = ug::zeros({0, 3});
  EXPECT_THROW(e.max(), ug::RuntimeError);
  EXPECT_THROW(e.argmax(), ug::IndexError);
  EXPECT_THROW(e.max(0), ug::IndexError);
  EXPECT_THROW(e.amin({0}), ug::IndexError);
  EXPECT_THROW(e.argmin(0), ug::IndexError);
  EXPECT_EQ(e.amax({1}).shape(), shape({0}));  // reducing the non-empty dim is fine
}

TEST(ReduceArgmax, FlatAndPerDim) {
  Tensor x = ug::tensor({{3.0, 7.0, 1.0}, {9.0, -1.0, 2.0}});
  Tensor flat = x.argmax();
  EXPECT_EQ(flat.dim(), 0);
  EXPECT_EQ(flat.item<int64_t>(), 3);
  EXPECT_EQ(x.argmin().item<int64_t>(), 4);
  expect_values(x.argmax(1), {1, 0});
  expect_values(x.argmin(-2), {0, 1, 0});
  EXPECT_EQ(x.argmax(std::nullopt, true).shape(), shape({1, 1}));
  EXPECT_EQ(x.argmax(0, true).shape(), shape({1, 3}));
  EXPECT_EQ(ug::scalar_tensor(4.0).argmax().item<int64_t>(), 0);
}

// ---- var / std / norm -----------------------------------------------------------------------

TEST(ReduceVar, Corrections) {
  Tensor x = ug::tensor({1.0, 2.0, 3.0, 4.0});
  expect_values(x.var(), {5.0 / 3});
  expect_values(x.var(std::nullopt, 0), {1.25});
  expect_values(x.std(), {std::sqrt(5.0 / 3)});
  Tensor m = m23();
  expect_values(m.var(Dims{1}), {1, 1});
  expect_values(m.var(Dims{0}, 0), {2.25, 2.25, 2.25});
  EXPECT_EQ(m.std(Dims{-1}, 1, true).shape(), shape({2, 1}));
  expect_values(ug::tensor({5.0}).var(), {kNaN});  // N - correction = 0
  // Two-pass variance stays exact with a large offset.
  Tensor big = ug::tensor({1e8 + 1, 1e8 + 2, 1e8 + 3}, {.dtype = ug::float64});
  expect_values(big.var(), {1}, 1e-9);
  EXPECT_THROW(ug::tensor({1, 2}).var(), ug::TypeError);
  expect_values(ug::tensor({1.0, 3.0}, {.dtype = ug::float16}).var(), {2});
}

TEST(ReduceNorm, Orders) {
  Tensor x = ug::tensor({{3.0, -4.0}, {0.0, 1.0}});
  expect_values(x.norm(), {std::sqrt(26.0)});
  expect_values(x.norm(1), {8});
  expect_values(x.norm(kInf), {4});
  expect_values(x.norm(-kInf), {0});
  expect_values(x.norm(0), {3});
  expect_values(x.norm(3), {std::cbrt(27.0 + 64 + 1)}, 1e-5);
  expect_values(x.norm(2, Dims{1}), {5, 1});
  EXPECT_EQ(x.norm(2, Dims{0}, true).shape(), shape({1, 2}));
  EXPECT_THROW(ug::tensor({1, 2}).norm(), ug::TypeError);
}

// ---- logsumexp / softmax ----------------------------------------------------------------------

TEST(ReduceLogsumexp, StableAndInfinite) {
  Tensor x = ug::tensor({{1000.0, 1000.0}, {-kInf, -kInf}, {0.0, kInf}});
  expect_values(x.logsumexp({1}), {1000 + std::log(2.0), -kInf, kInf}, 1e-3);
  expect_values(ug::tensor({1.0, 2.0, 3.0}).logsumexp({0}), {std::log(std::exp(1) + std::exp(2) + std::exp(3))}, 1e-5);
  EXPECT_EQ(x.logsumexp({1}, true).shape(), shape({3, 1}));
  expect_values(ug::zeros({2, 0}).logsumexp({1}), {-kInf, -kInf});
  Tensor i = ug::tensor({0, 0});
  EXPECT_EQ(i.logsumexp({0}).dtype(), ug::float32);
  expect_values(i.logsumexp({0}), {std::log(2.0)});
}

TEST(ReduceSoftmax, RowsSumToOne) {
  Tensor x = ug::tensor({{1.0, 2.0, 3.0}, {1000.0, 1000.0, 1000.0}});
  double z = std::exp(1) + std::exp(2) + std::exp(3);
  expect_values(x.softmax(1), {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  expect_values(x.log_softmax(-1),
                {1 - std::log(z), 2 - std::log(z), 3 - std::log(z), -std::log(3.0), -std::log(3.0), -std::log(3.0)},
                1e-5);
  expect_values(x.softmax(0).sum({0}), {1, 1, 1});
  expect_values(ug::tensor({-kInf, -kInf}).softmax(0), {kNaN, kNaN});
  expect_values(ug::tensor({-kInf, 0.0}).softmax(0), {0, 1});
  Tensor h = ug::tensor({0.0, 0.0}, {.dtype = ug::bfloat16}).softmax(0);
  EXPECT_EQ(h.dtype(), ug::bfloat16);
  expect_values(h, {0.5, 0.5});
  EXPECT_THROW(ug::tensor({1, 2}).softmax(0), ug::TypeError);
  EXPECT_THROW(x.softmax(2), ug::IndexError);
  EXPECT_EQ(ug::zeros({0, 3}).softmax(1).shape(), shape({0, 3}));
}

// ---- scans -----------------------------------------------------------------------------------

TEST(ReduceScan, CumsumCumprod) {
  Tensor x = m23();
  expect_values(x.cumsum(1), {1, 3, 6, 4, 9, 15});
  expect_values(x.cumsum(0), {1, 2, 3, 5, 7, 9});
  expect_values(x.cumprod(-1), {1, 2, 6, 4, 20, 120});
  expect_values(x.t().cumsum(0), {1, 4, 3, 9, 6, 15});
  Tensor i = ug::tensor({1, 2, 3}, {.dtype = ug::int32});
  EXPECT_EQ(i.cumsum(0).dtype(), ug::int64);
  Tensor b = ug::tensor({true, false, true});
  EXPECT_EQ(b.cumsum(0).dtype(), ug::int64);
  expect_values(b.cumsum(0), {1, 1, 2});
  expect_values(ug::scalar_tensor(3.0).cumsum(0), {3});
  EXPECT_EQ(ug::zeros({0}).cumsum(0).shape(), shape({0}));
  EXPECT_THROW(x.cumsum(2), ug::IndexError);
}

// ---- all / any ---------------------------------------------------------------------------------

TEST(ReduceLogical, AllAny) {
  Tensor x = ug::tensor({{1.0, 0.0}, {2.0, 3.0}});
  EXPECT_FALSE(x.all().item<bool>());
  EXPECT_TRUE(x.any().item<bool>());
  EXPECT_EQ(x.all().dtype(), ug::bool_);
  expect_values(x.all(1), {0, 1});
  expect_values(x.any(0, true), {1, 1});
  EXPECT_EQ(x.any(0, true).shape(), shape({1, 2}));
  EXPECT_TRUE(ug::zeros({0}).all().item<bool>());
  EXPECT_FALSE(ug::zeros({0}).any().item<bool>());
  EXPECT_EQ(ug::tensor({1, 2}, {.dtype = ug::uint8}).all().dtype(), ug::uint8);
}

// ---- sorting -----------------------------------------------------------------------------------

TEST(SortTest, ValuesAndIndices) {
  Tensor x = ug::tensor({{3.0, 1.0, 2.0}, {0.0, 5.0, -1.0}});
  auto [v, i] = x.sort();
  expect_values(v, {1, 2, 3, -1, 0, 5});
  expect_values(i, {1, 2, 0, 2, 0, 1});
  EXPECT_EQ(i.dtype(), ug::int64);
  auto [vd, id] = x.sort(0, true);
  expect_values(vd, {3, 5, 2, 0, 1, -1});
  expect_values(id, {0, 1, 0, 1, 0, 1});
  expect_values(x.argsort(1, true), {0, 2, 1, 1, 0, 2});
}

TEST(SortTest, StableTiesAndNaN) {
  Tensor x = ug::tensor({2.0, 1.0, kNaN, 1.0, 2.0});
  auto [v, i] = x.sort(0, false, true);
  expect_values(v, {1, 1, 2, 2, kNaN});
  expect_values(i, {1, 3, 0, 4, 2});
  auto [vd, id] = x.sort(0, true, true);
  expect_values(vd, {kNaN, 2, 2, 1, 1});
  expect_values(id, {2, 0, 4, 1, 3});
}

TEST(SortTest, EdgeShapes) {
  auto [v, i] = ug::scalar_tensor(4.0).sort();
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  auto [ve, ie] = ug::zeros({2, 0}).sort(1);
  EXPECT_EQ(ve.shape(), shape({2, 0}));
  EXPECT_THROW(ug::zeros({2}).sort(1), ug::IndexError);
}

TEST(SortTest, Topk) {
  Tensor x = ug::tensor({{1.0, 9.0, 3.0, 7.0}, {4.0, 2.0, 8.0, 6.0}});
  auto [v, i] = x.topk(2);
  expect_values(v, {9, 7, 8, 6});
  expect_values(i, {1, 3, 2, 3});
  auto [vs, is] = x.topk(1, 0, false);
  EXPECT_EQ(vs.shape(), shape({1, 4}));
  expect_values(vs, {1, 2, 3, 6});
  expect_values(is, {0, 1, 0, 1});
  EXPECT_EQ(x.topk(0).first.shape(), shape({2, 0}));
  EXPECT_THROW(x.topk(5), ug::RuntimeError);
  EXPECT_THROW(x.topk(-1), ug::RuntimeError);
}

}  // namespace
