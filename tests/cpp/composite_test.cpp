// torch's conveniences composed of other ops (ug/ops/composite.h) and the dtype limits
// (ug/core/type_info.h) in C++; tests/python/test_composite.py checks them against torch under
// every transform.
#include <cmath>
#include <limits>

#include "test_util.h"
#include "ug/core/type_info.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/linalg.h"
#include "ug/ops/view.h"

namespace ug {
namespace {

TEST(Composite, TrianglesDiagonalsAndTrace) {
  const Tensor x = arange(1.0, 10.0).reshape({3, 3});
  test::expect_values(tril(x), {1, 0, 0, 4, 5, 0, 7, 8, 9}, 0);
  test::expect_values(triu(x, 1), {0, 2, 3, 0, 0, 6, 0, 0, 0}, 0);
  test::expect_values(diag(x, -1), {4, 8}, 0);
  test::expect_values(diag(diag(x)), {1, 0, 0, 0, 5, 0, 0, 0, 9}, 0);
  EXPECT_EQ(trace(x).item<double>(), 15.0);
  EXPECT_THROW(tril(arange(3.0)), ValueError);
}

TEST(Composite, GridsProductsAndNans) {
  auto grids = meshgrid({arange(2.0), arange(3.0)}, "xy");
  EXPECT_EQ(grids[0].shape(), (Shape{3, 2}));
  test::expect_values(grids[1], {0, 0, 1, 1, 2, 2}, 0);
  test::expect_values(addmm(ones({2, 2}), eye(2), full({2, 2}, 3.0), 0.5, 2.0), {6.5, 6.5, 6.5, 6.5}, 0);
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor v = tensor({std::nan(""), inf, -inf, 2.0});
  test::expect_values(nan_to_num(v, 0.0, 1.0), {0, 1, -finfo(DType::Float32).max, 2}, 0);
  EXPECT_EQ(nansum(v.narrow(0, 3, 1)).item<double>(), 2.0);
  EXPECT_EQ(finfo(DType::BFloat16).eps, 0.0078125);
  EXPECT_EQ(iinfo(DType::Int8).min, -128);
  EXPECT_THROW(finfo(DType::Int32), TypeError);
}

// The values are torch 2.13's (tests/python/test_torch_signatures_a.py checks more).
TEST(Composite, TorchSignatures) {
  const Options i64{.dtype = DType::Int64};
  const Tensor a = tensor({7.0, -7.0, 5.0}, i64), b = tensor({2.0, 2.0, -3.0}, i64);
  EXPECT_EQ(div(a, b, "floor").dtype(), DType::Int64);
  test::expect_values(div(a, b, "floor"), {3, -4, -2}, 0);
  test::expect_values(div(a, b, "trunc"), {3, -3, -1}, 0);
  EXPECT_THROW(div(a, tensor({1.0, 0.0, 1.0}, i64), "floor"), RuntimeError);
  EXPECT_THROW(div(a, 2, "round"), RuntimeError);
  test::expect_values(round(tensor({1.25, 1.35, 15.0}), 1), {1.2, 1.4, 15.0}, 1e-6);
  test::expect_values(round(tensor({15.0, 25.0}), -1), {20, 20}, 0);
  auto [mantissa, exponent] = frexp(tensor({0.75, -3.0, 0.0}));
  test::expect_values(mantissa, {0.75, -0.75, 0}, 0);
  EXPECT_EQ(exponent.dtype(), DType::Int32);
  test::expect_values(exponent, {0, 2, 0}, 0);
  test::expect_values(gcd(tensor({12.0, -12.0, 0.0}, i64), tensor({8.0, 18.0, 0.0}, i64)), {4, 6, 0}, 0);
  test::expect_values(lcm(tensor({12.0, -12.0, 0.0}, i64), tensor({8.0, 18.0, 5.0}, i64)), {24, 36, 0}, 0);
  test::expect_values(clamp_min(tensor({-1.0, 2.0}), 0.5), {0.5, 2}, 0);
  test::expect_values(clamp_max(tensor({-1.0, 2.0}), tensor({0.0, 1.0})), {-1, 1}, 0);
  test::expect_values(linalg::cross(tensor({1.0, 0.0, 0.0}), tensor({0.0, 1.0, 0.0})), {0, 0, 1}, 0);
  EXPECT_EQ(movedim(ones({2, 3, 4}), {0, 1}, {2, 0}).shape(), (Shape{3, 4, 2}));
  EXPECT_THROW(movedim(ones({2, 3}), {0, 0}, {1, 0}), RuntimeError);
}

}  // namespace
}  // namespace ug
